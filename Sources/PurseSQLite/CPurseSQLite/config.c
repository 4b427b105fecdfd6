#include "CPurseSQLite.h"
#include "sqlite_nio_sqlite3.h"

int purse_sqlite3_config_getpcache2(void *methods) {
    return sqlite_nio_sqlite3_config(SQLITE_CONFIG_GETPCACHE2, (sqlite3_pcache_methods2 *)methods);
}

int purse_sqlite3_config_pcache2(const void *methods) {
    return sqlite_nio_sqlite3_config(SQLITE_CONFIG_PCACHE2, (const sqlite3_pcache_methods2 *)methods);
}

/* ---- A per-thread pool for the in-memory sub-journal's chunks ---------------------------- */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define PURSE_POOL_CAPACITY 256

typedef struct {
    int count;
    void *blocks[PURSE_POOL_CAPACITY];
} PurseChunkPool;

static sqlite3_mem_methods purse_base_mem;
static int purse_pool_request;   /* the pooled request size, rounded as the base allocator rounds */
static int purse_pool_block;     /* what the base allocator reports as the size of such a block */
static int purse_pool_limit;     /* blocks kept per thread, at most PURSE_POOL_CAPACITY */
static pthread_key_t purse_pool_key;
static atomic_long purse_pool_reused;

static void purse_pool_release(void *pointer) {
    PurseChunkPool *pool = pointer;
    for (int index = 0; index < pool->count; index++) purse_base_mem.xFree(pool->blocks[index]);
    free(pool);
}

static PurseChunkPool *purse_pool(void) {
    PurseChunkPool *pool = pthread_getspecific(purse_pool_key);
    if (pool == NULL) {
        pool = calloc(1, sizeof(PurseChunkPool));
        if (pool != NULL && pthread_setspecific(purse_pool_key, pool) != 0) {
            free(pool);
            pool = NULL;
        }
    }
    return pool;
}

static void *purse_pool_malloc(int bytes) {
    if (purse_base_mem.xRoundup(bytes) == purse_pool_request) {
        PurseChunkPool *pool = purse_pool();
        if (pool != NULL && pool->count > 0) {
            atomic_fetch_add_explicit(&purse_pool_reused, 1, memory_order_relaxed);
            return pool->blocks[--pool->count];
        }
    }
    return purse_base_mem.xMalloc(bytes);
}

static void purse_pool_free(void *block) {
    if (block != NULL && purse_base_mem.xSize(block) == purse_pool_block) {
        PurseChunkPool *pool = purse_pool();
        if (pool != NULL && pool->count < purse_pool_limit) {
            pool->blocks[pool->count++] = block;
            return;
        }
    }
    purse_base_mem.xFree(block);
}

static void *purse_pool_realloc(void *block, int bytes) { return purse_base_mem.xRealloc(block, bytes); }
static int purse_pool_size(void *block) { return purse_base_mem.xSize(block); }
static int purse_pool_roundup(int bytes) { return purse_base_mem.xRoundup(bytes); }
static int purse_pool_init(void *argument) { return purse_base_mem.xInit(argument); }
static void purse_pool_shutdown(void *argument) { purse_base_mem.xShutdown(argument); }

int purse_sqlite3_install_chunk_pool(int requestBytes, int perThread) {
    if (requestBytes <= 0 || perThread <= 0 || perThread > PURSE_POOL_CAPACITY) return SQLITE_MISUSE;
    int rc = sqlite_nio_sqlite3_config(SQLITE_CONFIG_GETMALLOC, &purse_base_mem);
    if (rc != SQLITE_OK) return rc;
    if (purse_base_mem.xMalloc == NULL || purse_base_mem.xFree == NULL || purse_base_mem.xRealloc == NULL
        || purse_base_mem.xSize == NULL || purse_base_mem.xRoundup == NULL || purse_base_mem.xInit == NULL
        || purse_base_mem.xShutdown == NULL) return SQLITE_ERROR;
    /* The base allocator works before SQLite initialises (the default one is malloc). */
    void *probe = purse_base_mem.xMalloc(requestBytes);
    if (probe == NULL) return SQLITE_NOMEM;
    purse_pool_block = purse_base_mem.xSize(probe);
    purse_base_mem.xFree(probe);
    purse_pool_request = purse_base_mem.xRoundup(requestBytes);
    purse_pool_limit = perThread;
    if (pthread_key_create(&purse_pool_key, purse_pool_release) != 0) return SQLITE_ERROR;
    sqlite3_mem_methods methods = {
        purse_pool_malloc, purse_pool_free, purse_pool_realloc, purse_pool_size, purse_pool_roundup,
        purse_pool_init, purse_pool_shutdown, NULL,
    };
    rc = sqlite_nio_sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
    if (rc != SQLITE_OK) pthread_key_delete(purse_pool_key);
    return rc;
}

long purse_sqlite3_chunk_pool_reused(void) {
    return atomic_load_explicit(&purse_pool_reused, memory_order_relaxed);
}
