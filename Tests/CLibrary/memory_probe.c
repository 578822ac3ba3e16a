/*
 * The memory libopenreplaykit adds to an app: this program's anonymous RSS (RssAnon, the
 * memory that is the process's own, not shared file pages) bare, after it loads the library,
 * and once a client is connected and watching the capture state. One JSON line:
 *
 *   memory_probe LIBRARY SOCKET   {"bareKB":…,"loadedKB":…,"clientKB":…,"watching":true}
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openreplaykit.h>

static long rss_anon_kb(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (status && fgets(line, sizeof line, status))
        if (sscanf(line, "RssAnon: %ld kB", &kb) == 1) break;
    if (status) fclose(status);
    return kb;
}

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
    long bare = rss_anon_kb();
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
    printf("{\"bareKB\":%ld,\"loadedKB\":%ld,\"clientKB\":%ld,\"watching\":%s}\n", bare, loaded, connected, watching ? "true" : "false");
    return 0;
}
