/// OpenReplayKit's version: the one place it is written. `replay --version`, `replayd
/// --version` and `replay status --json` print it; packaging reads it from this file.
public enum ReleaseVersion {
    public static let current = "0.25.0"
}
