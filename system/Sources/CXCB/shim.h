#ifndef CXCB_SHIM_H
#define CXCB_SHIM_H
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/memfd.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/damage.h>
#include <xcb/xfixes.h>
#include <xcb/randr.h>
#include <xcb/res.h>

/* Event codes carry a "sent by SendEvent" bit that Swift should not have to know about. */
static inline uint8_t CXCB_eventType(const xcb_generic_event_t *event) { return event->response_type & 0x7f; }

/* The extension ids are mutable C globals; reach them through functions. */
static inline uint8_t CXCB_damageFirstEvent(xcb_connection_t *c) {
    const xcb_query_extension_reply_t *r = xcb_get_extension_data(c, &xcb_damage_id);
    return (r && r->present) ? r->first_event : 0;
}
static inline uint8_t CXCB_randrFirstEvent(xcb_connection_t *c) {
    const xcb_query_extension_reply_t *r = xcb_get_extension_data(c, &xcb_randr_id);
    return (r && r->present) ? r->first_event : 0;
}
static inline int CXCB_hasExtension(xcb_connection_t *c, int which) {
    xcb_extension_t *ext = which == 0 ? &xcb_shm_id : which == 1 ? &xcb_damage_id : which == 2 ? &xcb_xfixes_id
                         : which == 3 ? &xcb_randr_id : &xcb_res_id;
    const xcb_query_extension_reply_t *r = xcb_get_extension_data(c, ext);
    return r && r->present;
}

/* Anonymous shared memory for MIT-SHM images: freed by the kernel when the last user goes,
   even if the daemon is killed. */
static inline int CXCB_memfd(const char *name) {
    return (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);
}
#endif
