#include "CPurseSQLite.h"
#include "sqlite_nio_sqlite3.h"

int purse_sqlite3_config_getpcache2(void *methods) {
    return sqlite_nio_sqlite3_config(SQLITE_CONFIG_GETPCACHE2, (sqlite3_pcache_methods2 *)methods);
}

int purse_sqlite3_config_pcache2(const void *methods) {
    return sqlite_nio_sqlite3_config(SQLITE_CONFIG_PCACHE2, (const sqlite3_pcache_methods2 *)methods);
}
