// The C header compiled as C++.
#include <wzero/wzero.h>
