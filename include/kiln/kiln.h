// kiln: the public umbrella header. Everything a user needs is reachable from here.
#pragma once

#include "ops/functions.h"
#include "ops/optim/adam.h"
#include "ops/optim/sgd.h"
#include "runtime/allocator.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/config.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/philox.h"
#include "runtime/profiler.h"
#include "runtime/scalar.h"
#include "runtime/tensor.h"
#include "runtime/tensor_options.h"
#include "tracer/hop/hop.h"
