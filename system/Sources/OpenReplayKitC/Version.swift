#if canImport(Glibc)
import Glibc
#endif
import ReplayIPC

@_cdecl("ork_version")
public func ork_version() -> UnsafePointer<CChar> { StaticText.version }

extension StaticText {
    nonisolated(unsafe) static let version = UnsafePointer(strdup(ReleaseVersion.current)!)
}
