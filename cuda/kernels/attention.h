// TEMPORARY shim until the kernels header split lands.
#pragma once
#include "cuda/kernels/kernels.h"
