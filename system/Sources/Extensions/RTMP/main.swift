import ReplayUpload

UploadExtension.run(.rtmp)
