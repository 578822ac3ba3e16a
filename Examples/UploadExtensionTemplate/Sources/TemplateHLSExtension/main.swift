import ReplayExtensionKit

// Connects to replayd (descriptor 3, set up by the sandbox) and calls the handler until the
// broadcast is over, answering replayd's heartbeats on the way.
BroadcastExtension.run(HLSHandler())
