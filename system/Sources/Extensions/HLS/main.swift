import ReplayUpload

UploadExtension.run(.hls)
