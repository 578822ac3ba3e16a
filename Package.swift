// swift-tools-version: 6.1
// OpenReplayKit's SDKs, added by this repository's URL: the app SDK (OpenReplayKit) and the
// upload extension SDK (ReplayExtensionKit, with its test harness ReplayExtensionTesting).
// It depends on no other Swift package, so adding it resolves nothing else and builds offline.
// replayd, replay, replay-ui, the capture process and the shipped extensions are a package of
// their own in system/, which depends on this one by path.
import PackageDescription

/// Every Swift target: Swift 6 language mode plus the upcoming features that keep
/// module boundaries honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "OpenReplayKit",
    platforms: [.macOS(.v15)],
    products: [
        // For apps: recording with consent, in-app capture, the clip buffer, the broadcast
        // picker, capture state, protected windows.
        .library(name: "OpenReplayKit", targets: ["OpenReplayKit"]),
        // For upload extensions, and the harness their tests run them in.
        .library(name: "ReplayExtensionKit", targets: ["ReplayExtensionKit"]),
        .library(name: "ReplayExtensionTesting", targets: ["ReplayExtensionTesting"]),
        // The sample types and the pixel conversion an extension may use.
        .library(name: "ReplayMedia", targets: ["ReplayMedia"]),
        .library(name: "ReplayProcessing", targets: ["ReplayProcessing"]),
        // The wire protocols and system calls under both SDKs, for OpenReplayKit's own programs
        // (system/); what only they may use is SPI (`@_spi(OpenReplayKitInternal)`).
        .library(name: "ReplayIPC", targets: ["ReplayIPC"]),
        .library(name: "ReplaySystem", targets: ["ReplaySystem"]),
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
        // The app SDK: recording, in-app capture and capture state, all through replayd.
        .target(name: "OpenReplayKit", dependencies: ["ReplayIPC", "ReplaySystem", "ReplayMedia"], swiftSettings: strictSettings),
        // What an extension is written with, and the harness its tests run it in.
        .target(name: "ReplayExtensionKit", dependencies: ["ReplayIPC", "ReplaySystem", "ReplayMedia"], swiftSettings: strictSettings),
        .target(
            name: "ReplayExtensionTesting", dependencies: ["ReplayExtensionKit", "ReplayIPC", "ReplayMedia", "ReplaySystem"],
            swiftSettings: strictSettings),
    ]
)
