#ifndef CPURSESQLITE_H
#define CPURSESQLITE_H

/// `sqlite3_config` takes its arguments as C varargs, which Swift cannot pass. These call it
/// with one pointer argument each; like `sqlite3_config`, they work only before SQLite is
/// initialised in the process and return its result code.

/// `sqlite3_config(SQLITE_CONFIG_GETPCACHE2, methods)`: copies the page cache's methods
/// (a `sqlite3_pcache_methods2`) into `methods`.
int purse_sqlite3_config_getpcache2(void *methods);

/// `sqlite3_config(SQLITE_CONFIG_PCACHE2, methods)`: makes `methods` (a
/// `sqlite3_pcache_methods2`, copied) the page cache of every connection.
int purse_sqlite3_config_pcache2(const void *methods);

/// Makes SQLite's allocator keep freed blocks of one size — requests that round to
/// `requestBytes` — on a per-thread free list of up to `perThread` blocks (at most 256), handing
/// them out again before asking the allocator underneath (SQLite's default: `malloc`). Everything
/// else passes through. Freed blocks go to the pool of the thread that frees them; a thread's
/// pool is returned to the allocator when the thread exits. Like `sqlite3_config`, only before
/// SQLite initialises; returns its result code.
int purse_sqlite3_install_chunk_pool(int requestBytes, int perThread);

/// How many allocations the pool has served since the process started.
long purse_sqlite3_chunk_pool_reused(void);

#endif
