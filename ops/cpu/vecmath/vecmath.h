// Every vecmath function family (see each header's contract and docs/numerics.md).
#pragma once
#include "ops/cpu/vecmath/erf.h"
#include "ops/cpu/vecmath/exp_log.h"
#include "ops/cpu/vecmath/pow.h"
#include "ops/cpu/vecmath/sin_cos.h"
#include "ops/cpu/vecmath/tanh_sigmoid.h"
