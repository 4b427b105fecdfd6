// The declaration of libFuzzer's driver is all this module holds (include/CLibFuzzer.h).
#include "CLibFuzzer.h"
