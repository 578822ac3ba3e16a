import ReplayUpload

UploadExtension.run(.srt)
