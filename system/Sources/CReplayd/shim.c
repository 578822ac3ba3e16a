#include "CReplayd.h"

// Swift's runtime calls this hook, when it is set, with every job its global executor is given
// (swift/Runtime/Concurrency.h). Referenced here, not looked up by dlsym: a release build links
// the runtime in, and its symbols are then not in the dynamic symbol table.
typedef __attribute__((swiftcall)) void (*CReplayd_enqueue_original)(void *job);
typedef __attribute__((swiftcall)) void (*CReplayd_enqueue_hook)(void *job, CReplayd_enqueue_original original);
extern CReplayd_enqueue_hook swift_task_enqueueGlobal_hook;

static void (*CReplayd_enqueue)(void *job);

static __attribute__((swiftcall)) void CReplayd_enqueue_global(void *job, CReplayd_enqueue_original original) {
    (void)original;
    CReplayd_enqueue(job);
}

void CReplayd_take_over_global_executor(void (*enqueue)(void *job)) {
    CReplayd_enqueue = enqueue;
    swift_task_enqueueGlobal_hook = CReplayd_enqueue_global;
}
