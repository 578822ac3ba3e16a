/*
 * The memory libopenreplaykit adds to an app: this program's anonymous RSS (RssAnon, the
 * memory that is the process's own, not shared file pages) bare, after it loads the library,
 * and once a client is connected and watching the capture state. One JSON line:
 *
 *   memory_probe LIBRARY SOCKET   {"bareKB":…,"loadedKB":…,"clientKB":…,"watching":true,
 *                                  "bareRSSKB":…,"clientRSSKB":…}   (the last two: VmRSS, shared pages too)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openreplaykit.h>

/* A line of /proc/self/status, in kB ("RssAnon", "VmRSS"). */
static long status_kb(const char *field) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t length = strlen(field);
    while (status && fgets(line, sizeof line, status))
        if (strncmp(line, field, length) == 0 && line[length] == ':' && sscanf(line + length + 1, "%ld", &kb) == 1) break;
    if (status) fclose(status);
    return kb;
}

static long rss_anon_kb(void) { return status_kb("RssAnon"); }

static void ignore(ork_client *client, uint32_t reasons, void *user_data) {
    (void)client;
    (void)reasons;
    (void)user_data;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: memory_probe LIBRARY SOCKET\n");
        return 2;
    }
    long bare = rss_anon_kb(), bare_total = status_kb("VmRSS");
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    long loaded = rss_anon_kb();
    int (*client_new)(const char *, ork_client **, ork_error **) = (int (*)(const char *, ork_client **, ork_error **))dlsym(library, "ork_client_new");
    int (*state_watch)(ork_client *, ork_capture_state_callback, void *, ork_error **) =
        (int (*)(ork_client *, ork_capture_state_callback, void *, ork_error **))dlsym(library, "ork_capture_state_watch");
    int (*state_get)(ork_client *, uint32_t *, ork_error **) = (int (*)(ork_client *, uint32_t *, ork_error **))dlsym(library, "ork_capture_state_get");
    if (!client_new || !state_watch || !state_get) return 1;
    ork_client *client = NULL;
    uint32_t reasons = 0;
    int watching = client_new(argv[2], &client, NULL) == ORK_OK && state_watch(client, ignore, NULL, NULL) == ORK_OK &&
                   state_get(client, &reasons, NULL) == ORK_OK;
    long connected = rss_anon_kb();
    printf("{\"bareKB\":%ld,\"loadedKB\":%ld,\"clientKB\":%ld,\"watching\":%s,\"bareRSSKB\":%ld,\"clientRSSKB\":%ld}\n", bare, loaded,
           connected, watching ? "true" : "false", bare_total, status_kb("VmRSS"));
    return 0;
}
