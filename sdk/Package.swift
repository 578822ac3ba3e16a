// swift-tools-version: 6.1
// The upload extension SDK: what an extension's author depends on, and nothing more. It holds
// the extension kit, its test harness, the sample types and the live video source and audio
// mixer, with the wire protocol and system calls they are built on. It depends on no other
// Swift package, so it builds offline from this folder alone. OpenReplayKit's own package
// (one folder up) compiles these same sources for replayd.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "OpenReplayKitSDK",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ReplayExtensionKit", targets: ["ReplayExtensionKit"]),
        .library(name: "ReplayExtensionTesting", targets: ["ReplayExtensionTesting"]),
        .library(name: "ReplayMedia", targets: ["ReplayMedia"]),
        .library(name: "ReplayProcessing", targets: ["ReplayProcessing"]),
    ],
    targets: [
        // libyuv from Debian's package, for pixel conversion.
        .systemLibrary(name: "CYUV", providers: [.apt(["libyuv-dev"])]),
        // Small C helpers for macros and GNU-only calls (CMSG_*, memfd seals), prefixed CShims_.
        .target(name: "CShims"),
        // Core value types: no C, no Glibc.
        .target(name: "ReplayMedia", swiftSettings: strictSettings),
        // Pixel conversion and audio timing.
        .target(name: "ReplayProcessing", dependencies: ["ReplayMedia", "CYUV"], swiftSettings: strictSettings),
        // Syscall funnel, descriptors, processes, clocks.
        .target(name: "ReplaySystem", dependencies: ["CShims"], swiftSettings: strictSettings),
        // The wire protocols: replayd's and the extension's.
        .target(name: "ReplayIPC", dependencies: ["ReplaySystem", "ReplayMedia", "CShims"], swiftSettings: strictSettings),
        // What an extension is written with, and the harness its tests run it in.
        .target(name: "ReplayExtensionKit", dependencies: ["ReplayIPC", "ReplaySystem", "ReplayMedia"], swiftSettings: strictSettings),
        .target(
            name: "ReplayExtensionTesting", dependencies: ["ReplayExtensionKit", "ReplayIPC", "ReplayMedia", "ReplaySystem"],
            swiftSettings: strictSettings),
    ]
)
