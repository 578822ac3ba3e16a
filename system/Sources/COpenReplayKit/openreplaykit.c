/* The header's own checks; libopenreplaykit's functions are written in Swift (Sources/OpenReplayKitC). */
#include "openreplaykit.h"

_Static_assert(sizeof(ork_recording) == ORK_RECORDING_ID_SIZE + 16, "ork_recording has no padding");
