/* Placeholder: filled by the protocol-engine test work (issue 5). */
#include "efarm_test.h"
