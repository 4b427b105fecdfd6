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

#endif
