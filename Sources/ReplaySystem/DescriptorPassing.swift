import CShims
#if canImport(Glibc)
import Glibc
#endif

/// Bytes with descriptors attached (SCM_RIGHTS) over a Unix socket: how surfaces reach an
/// extension. Works on SOCK_SEQPACKET (one send is one message) and SOCK_STREAM. Expects
/// a blocking socket.
public enum DescriptorPassing {
    /// Sends `bytes` with `descriptors` riding on the first chunk; the caller still owns
    /// (and closes) its descriptors. Without SIGPIPE: a gone peer is an EPIPE error.
    public static func send(socket: Int32, bytes: [UInt8], descriptors: [Int32]) throws(SystemError) {
        // Linux drops descriptors sent with no bytes on a stream socket.
        guard descriptors.isEmpty || !bytes.isEmpty else {
            throw SystemError(call: "sendmsg (descriptors need at least one byte)", errno: EINVAL)
        }
        let control = controlBuffer(descriptors: descriptors.count)
        defer { control.deallocate() }
        var sent = try syscall("sendmsg") {
            bytes.withUnsafeBytes { data in
                withMessage(data: UnsafeMutableRawBufferPointer(mutating: data), control: control) { message in
                    if let header = CShims_CMSG_FIRSTHDR(message) {
                        header.pointee.cmsg_level = SOL_SOCKET
                        header.pointee.cmsg_type = Int32(SCM_RIGHTS)
                        header.pointee.cmsg_len = CShims_CMSG_LEN(descriptors.count * MemoryLayout<Int32>.stride)
                        if let payload = CShims_CMSG_DATA(header) {
                            descriptors.withUnsafeBytes { UnsafeMutableRawBufferPointer(start: payload, count: $0.count).copyMemory(from: $0) }
                        }
                    }
                    return sendmsg(socket, message, Int32(MSG_NOSIGNAL))
                }
            }
        }
        // Only a stream socket sends part of a message; the descriptors went with the first part.
        while sent < bytes.count {
            let offset = sent
            sent += try syscall("send") {
                bytes.withUnsafeBytes {
                    let rest = UnsafeRawBufferPointer(rebasing: $0[offset...])
                    return Glibc.send(socket, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
                }
            }
        }
    }

    /// One message (or on a stream, what is there, up to `maxBytes`) and the descriptors that
    /// came with it, close-on-exec; empty bytes at end of stream. Control data cut short, a
    /// message longer than `maxBytes`, or more than `maxDescriptors` descriptors throw, with
    /// every received descriptor closed: a hostile peer cannot leak descriptors into us.
    public static func receive(socket: Int32, maxBytes: Int, maxDescriptors: Int) throws(SystemError) -> (bytes: [UInt8], descriptors: [Int32]) {
        let control = controlBuffer(descriptors: maxDescriptors)
        defer { control.deallocate() }
        var descriptors: [Int32] = []
        var flags: Int32 = 0
        func receiveOnce(into data: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
            try syscall("recvmsg") {
                withMessage(data: data, control: control) { message in
                    let result = recvmsg(socket, message, Int32(MSG_CMSG_CLOEXEC))
                    if result >= 0 { (descriptors, flags) = (attached(to: message), message.pointee.msg_flags) }
                    return result
                }
            }
        }
        // Not zeroed first: the message may be up to `maxBytes` long but is mostly a few
        // hundred bytes, and only the pages the kernel writes are then touched.
        var failure: SystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: maxBytes) { buffer, count in
            let data = UnsafeMutableRawBufferPointer(buffer)
            do throws(SystemError) {
                do throws(SystemError) {
                    count = try receiveOnce(into: data)
                } catch where error.errno == ECONNRESET {
                    // A peer that closed with messages of ours unread resets the connection, and Linux
                    // says so once, before the messages it sent us first: they are still queued (then
                    // the end). Read on, or its last words (a summary, why it ended) would be lost.
                    count = try receiveOnce(into: data)
                }
            } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        let cutShort = flags & Int32(MSG_CTRUNC | MSG_TRUNC) != 0
        guard !cutShort, descriptors.count <= maxDescriptors else {
            descriptors.forEach { close($0) }
            throw SystemError(call: "recvmsg (message or descriptors over the limit)", errno: EMSGSIZE)
        }
        return (Array(bytes[...]), descriptors)  // sized to the message, not to `maxBytes`
    }

    /// Room for `descriptors` descriptors, aligned for cmsghdr; empty (no control data) for 0.
    private static func controlBuffer(descriptors: Int) -> UnsafeMutableRawBufferPointer {
        let length = descriptors > 0 ? CShims_CMSG_SPACE(descriptors * MemoryLayout<Int32>.stride) : 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: MemoryLayout<cmsghdr>.alignment)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        return buffer
    }

    /// Runs `body` on a msghdr over `data` and `control`; its pointers are valid only inside.
    private static func withMessage(data: UnsafeMutableRawBufferPointer, control: UnsafeMutableRawBufferPointer,
                                    _ body: (UnsafeMutablePointer<msghdr>) -> Int) -> Int {
        var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
        return withUnsafeMutablePointer(to: &vector) { vector in
            var message = msghdr()
            message.msg_iov = vector
            message.msg_iovlen = 1
            message.msg_control = control.isEmpty ? nil : control.baseAddress
            message.msg_controllen = control.count
            return withUnsafeMutablePointer(to: &message, body)
        }
    }

    /// Every descriptor in the SCM_RIGHTS headers the kernel filled in.
    private static func attached(to message: UnsafeMutablePointer<msghdr>) -> [Int32] {
        var descriptors: [Int32] = []
        var next = CShims_CMSG_FIRSTHDR(message)
        while let header = next {
            if header.pointee.cmsg_level == SOL_SOCKET && header.pointee.cmsg_type == Int32(SCM_RIGHTS),
               let payload = CShims_CMSG_DATA(header) {
                let count = (Int(header.pointee.cmsg_len) - CShims_CMSG_LEN(0)) / MemoryLayout<Int32>.stride
                let data = UnsafeRawPointer(payload)
                for index in 0..<count {
                    descriptors.append(data.loadUnaligned(fromByteOffset: index * MemoryLayout<Int32>.stride, as: Int32.self))
                }
            }
            next = CShims_CMSG_NXTHDR(message, header)
        }
        return descriptors
    }
}
