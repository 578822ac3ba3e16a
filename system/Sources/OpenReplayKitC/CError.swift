#if canImport(Glibc)
import Glibc
#endif

/// An error object handed to C (`ork_error`): its status and its message, kept as a C string
/// until `ork_error_free`.
final class CErrorObject: @unchecked Sendable {
    // @unchecked: `message` is written once, in init, and freed once, in deinit.
    let status: CStatus
    let message: UnsafeMutablePointer<CChar>

    init(_ failure: CFailure) {
        status = failure.status
        message = strdup(failure.message)
    }

    deinit { free(message) }
}

let errors = HandleTable<CErrorObject>(tag: 0x4f52_4b45 << 32)

/// Returns `failure`'s status, and an error object through `error` when the caller asked for
/// one (non-NULL, and still NULL: an error already there is kept, as GLib's GError).
func report(_ failure: CFailure, _ error: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    if let error, error.pointee == nil {
        error.pointee = OpaquePointer(errors.insert(CErrorObject(failure)))
    }
    return failure.status.rawValue
}

/// Runs `body`; its failure becomes a status and, if asked for, an error object.
func call(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ body: () throws(CFailure) -> Void) -> Int32 {
    do {
        try body()
        return CStatus.ok.rawValue
    } catch {
        return report(error, out)
    }
}

@_cdecl("ork_error_status")
public func ork_error_status(_ error: OpaquePointer?) -> Int32 {
    errors.lookup(UnsafeRawPointer(error))?.status.rawValue ?? CStatus.invalidHandle.rawValue
}

@_cdecl("ork_error_message")
public func ork_error_message(_ error: OpaquePointer?) -> UnsafePointer<CChar> {
    guard let object = errors.lookup(UnsafeRawPointer(error)) else { return StaticText.invalidError }
    return UnsafePointer(object.message)
}

@_cdecl("ork_error_free")
public func ork_error_free(_ error: OpaquePointer?) {
    _ = errors.remove(UnsafeRawPointer(error))
}

@_cdecl("ork_status_name")
public func ork_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    guard let known = CStatus(rawValue: status) else { return StaticText.unknownStatus }
    return StaticText.names[known.rawValue] ?? StaticText.unknownStatus
}

/// Strings the library returns and never frees.
enum StaticText {
    nonisolated(unsafe) static let invalidError = UnsafePointer(strdup("not an error object of libopenreplaykit (NULL or freed)")!)
    nonisolated(unsafe) static let unknownStatus = UnsafePointer(strdup("ORK_STATUS_UNKNOWN")!)
    nonisolated(unsafe) static let names: [Int32: UnsafePointer<CChar>] = Dictionary(
        uniqueKeysWithValues: CStatus.allCases.map { ($0.rawValue, UnsafePointer(strdup($0.name)!)) })
}
