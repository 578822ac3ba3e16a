// swift-tools-version: 6.1
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
        .executable(name: "replayd", targets: ["replayd"]),
        .executable(name: "replay", targets: ["replay"]),
        .executable(name: "replay-demo-scene", targets: ["replay-demo-scene"]),
        .library(name: "OpenReplayKit", targets: ["OpenReplayKit"]),
        .library(name: "ReplayExtensionKit", targets: ["ReplayExtensionKit"]),
        .library(name: "ReplayExtensionTesting", targets: ["ReplayExtensionTesting"]),
        .executable(name: "replay-file-extension", targets: ["replay-file-extension"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    ],
    targets: [
        // C libraries from Debian's packages, at the edges.
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev", "libx264-dev"])]),
        .systemLibrary(name: "CYUV", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(
            name: "CXCB", pkgConfig: "xcb",
            providers: [.apt(["libxcb1-dev", "libxcb-shm0-dev", "libxcb-damage0-dev",
                              "libxcb-xfixes0-dev", "libxcb-randr0-dev", "libxcb-res0-dev"])]),
        .systemLibrary(name: "CPulse", pkgConfig: "libpulse-simple", providers: [.apt(["libpulse-dev"])]),

        // Small C helpers for macros and GNU-only calls (CMSG_*, memfd seals), prefixed CShims_.
        .target(name: "CShims"),

        // Core value types: no C, no Glibc.
        .target(name: "ReplayMedia", swiftSettings: strictSettings),
        // Pixel conversion and audio timing.
        .target(name: "ReplayProcessing", dependencies: ["ReplayMedia", "CYUV"], swiftSettings: strictSettings),
        // X11 screen capture and PulseAudio capture.
        .target(
            name: "ReplayCapture",
            dependencies: ["ReplayMedia", "ReplayProcessing", "ReplaySystem", "CXCB", "CPulse"],
            swiftSettings: strictSettings),
        // FFmpeg-backed encoders and the fragmented MP4 writer.
        .target(name: "ReplayCodec", dependencies: ["ReplayMedia", "ReplaySystem", "CFFmpeg"], swiftSettings: strictSettings),
        // Syscall funnel, descriptors, processes, clocks.
        .target(name: "ReplaySystem", dependencies: ["CShims"], swiftSettings: strictSettings),
        // Wire protocol between replayd and its clients.
        .target(name: "ReplayIPC", dependencies: ["ReplaySystem"], swiftSettings: strictSettings),
        // replayd as a library: sessions, store, recording pipeline.
        .target(
            name: "ReplayDaemon",
            dependencies: [
                "ReplayMedia", "ReplayProcessing", "ReplayCapture", "ReplayCodec", "ReplayIPC", "ReplaySystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: strictSettings),
        // The virtual desktop (Xvfb, PulseAudio null sink, demo scene) used by the
        // CLI on a headless machine and by the integration tests.
        .target(
            name: "ReplayVirtualDesktop",
            dependencies: ["ReplaySystem", "CXCB", "CPulse"],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "replayd",
            dependencies: [
                "ReplayDaemon", "ReplayIPC", "ReplaySystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "replay",
            dependencies: [
                "ReplayIPC", "ReplaySystem", "ReplayVirtualDesktop",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings),
        // The app SDK: recording, in-app capture and capture state, all through replayd.
        .target(name: "OpenReplayKit", dependencies: ["ReplayIPC", "ReplaySystem", "ReplayMedia"], swiftSettings: strictSettings),
        // The SDK for upload extensions, and its offline test harness.
        .target(
            name: "ReplayExtensionKit", dependencies: ["ReplayIPC", "ReplaySystem", "ReplayMedia"],
            swiftSettings: strictSettings),
        .target(
            name: "ReplayExtensionTesting", dependencies: ["ReplayExtensionKit", "ReplayIPC", "ReplayMedia"],
            swiftSettings: strictSettings),
        // Reference upload extension: writes what it receives to a file (tests use it).
        .executableTarget(
            name: "replay-file-extension", dependencies: ["ReplayExtensionKit", "ReplayMedia"],
            path: "Sources/Extensions/File", exclude: ["file.json"], swiftSettings: strictSettings),
        // Misbehaving extensions for the host's fault tests (never installed).
        .executableTarget(
            name: "replay-hostile-extension", dependencies: ["ReplayExtensionKit", "ReplayMedia"],
            path: "Tests/HostileExtension", swiftSettings: strictSettings),
        // Times the live video source's per-frame work for bench/processing.
        .executableTarget(
            name: "replay-processing-bench", dependencies: ["ReplayProcessing", "ReplayMedia"],
            path: "bench/ProcessingBench", swiftSettings: strictSettings),
        // An app that uses all of OpenReplayKit: hides its secret while captured, records, shares its window.
        .executableTarget(
            name: "secret-notes",
            dependencies: ["OpenReplayKit", "CXCB", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/SecretNotes", swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-demo-scene",
            dependencies: ["ReplayVirtualDesktop"],
            swiftSettings: strictSettings),

        .testTarget(
            name: "ReplayExtensionKitTests", dependencies: ["ReplayExtensionKit", "ReplayExtensionTesting", "ReplayMedia", "ReplayIPC"],
            swiftSettings: strictSettings),
        .testTarget(name: "ReplayMediaTests", dependencies: ["ReplayMedia"], swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayProcessingTests", dependencies: ["ReplayProcessing", "ReplayMedia"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayCodecTests", dependencies: ["ReplayCodec", "ReplayMedia", "ReplayTesting"],
            swiftSettings: strictSettings),
        .testTarget(name: "ReplayCaptureTests", dependencies: ["ReplayCapture", "ReplaySystem"], swiftSettings: strictSettings),
        .testTarget(name: "ReplaySystemTests", dependencies: ["ReplaySystem"], swiftSettings: strictSettings),
        .testTarget(name: "ReplayIPCTests", dependencies: ["ReplayIPC", "ReplaySystem"], swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayDaemonTests", dependencies: ["ReplayDaemon", "ReplayIPC", "ReplaySystem"],
            swiftSettings: strictSettings),
        // Shared fixture and media checks for the integration tests.
        .target(
            name: "ReplayTesting", dependencies: ["ReplaySystem", "ReplayIPC", "ReplayVirtualDesktop"],
            path: "Tests/ReplayTesting", swiftSettings: strictSettings),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "ReplayTesting", "ReplaySystem", "ReplayIPC", "replayd", "replay", "replay-demo-scene", "secret-notes",
                "replay-file-extension", "replay-hostile-extension",
            ],
            swiftSettings: strictSettings),
    ]
)
