#ifndef CREPLAYD_H
#define CREPLAYD_H

/// Hands every job of Swift's global executor to `enqueue` from now on, instead of to
/// dispatch's global queues. Call it first thing, before any task runs.
void CReplayd_take_over_global_executor(void (*_Nonnull enqueue)(void *_Nonnull job));

#endif
