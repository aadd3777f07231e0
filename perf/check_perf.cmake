# Checks kiln-perf (run with cmake -DKILN_PERF=... -DOUT=... -DWITH_LIBTORCH=ON|OFF -P
# check_perf.cmake):
#  1. a short run writes JSON whose results carry every key BENCHMARKS.md fixes, with sane values;
#  2. a short eager,interp run: interp rows with the same keys plus speedup_vs_eager and the
#     region-cache hits and misses;
#  3. the loop, control-flow and region workloads (rnn_loop, rnn_scan, newton, compile_layers with
#     one figure per layer count) in both modes, and the compile_latency summary of first calls;
#  4. requests that are not available yet (mode jit among them) exit with status 2 and say why
#     (never a crash);
#  5. mode libtorch: without KILN_WITH_LIBTORCH, status 2 and how to build it; with it, a short
#     eager,libtorch run gives libtorch rows with the same keys and the side-by-side table.
cmake_minimum_required(VERSION 3.25)

# expect(<if() condition words> "message"): the last argument is the message.
# Local names start with _x_ so that they do not hide the caller's variables in the condition.
function(expect)
  math(EXPR _x_last "${ARGC} - 1")
  set(_x_msg "${ARGV${_x_last}}")  # taken whole: the message may contain ';'
  set(_x_cond "")
  math(EXPR _x_n "${_x_last} - 1")
  foreach(_x_i RANGE ${_x_n})
    list(APPEND _x_cond "${ARGV${_x_i}}")
  endforeach()
  if(NOT (${_x_cond}))
    message(FATAL_ERROR "perf check failed: ${_x_msg}")
  endif()
endfunction()

# Every key BENCHMARKS.md fixes is present in result i of the JSON text.
function(expect_required_keys json i label)
  foreach(key workload mode device median_ms min_ms max_ms gbps copy_fraction first_call_ms)
    string(JSON type ERROR_VARIABLE err TYPE "${json}" results ${i} ${key})
    expect(NOT err "${label}result ${i} has no key '${key}'")
  endforeach()
endfunction()

file(REMOVE "${OUT}")
execute_process(
  COMMAND "${KILN_PERF}" --size small --workloads copy,gelu,dispatch --reps 3 --json "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
message("${table}")
expect(rc EQUAL 0 "kiln-perf exited with ${rc}: ${progress}")
expect(EXISTS "${OUT}" "no JSON written to ${OUT}")
file(READ "${OUT}" json)

string(JSON n LENGTH "${json}" results)
expect(n EQUAL 3 "expected 3 results (copy, gelu, dispatch), got ${n}")
set(seen "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  expect_required_keys("${json}" ${i} "")
  string(JSON w GET "${json}" results ${i} workload)
  string(JSON mode GET "${json}" results ${i} mode)
  string(JSON dev GET "${json}" results ${i} device)
  expect(mode STREQUAL "eager" "result ${i}: mode is '${mode}'")
  expect(dev STREQUAL "cpu" "result ${i}: device is '${dev}'")
  list(APPEND seen ${w})
  foreach(key median_ms min_ms max_ms first_call_ms)
    string(JSON type TYPE "${json}" results ${i} ${key})
    expect(type STREQUAL "NUMBER" "${w}: ${key} is ${type}, expected a number")
  endforeach()
  string(JSON lo GET "${json}" results ${i} min_ms)
  string(JSON mid GET "${json}" results ${i} median_ms)
  string(JSON hi GET "${json}" results ${i} max_ms)
  expect("${lo}" LESS_EQUAL "${mid}" "${w}: min ${lo} > median ${mid}")
  expect("${mid}" LESS_EQUAL "${hi}" "${w}: median ${mid} > max ${hi}")
  expect("${lo}" GREATER 0 "${w}: min_ms ${lo} is not positive")
  string(JSON gt TYPE "${json}" results ${i} gbps)
  string(JSON ct TYPE "${json}" results ${i} copy_fraction)
  if(w STREQUAL "dispatch")
    expect(gt STREQUAL "NULL" "dispatch: gbps should be null, is ${gt}")
    expect(ct STREQUAL "NULL" "dispatch: copy_fraction should be null, is ${ct}")
    string(JSON us GET "${json}" results ${i} us_per_op)
    expect("${us}" GREATER 0 "dispatch: us_per_op ${us} is not positive")
  else()
    expect(gt STREQUAL "NUMBER" "${w}: gbps is ${gt}, expected a number")
    expect(ct STREQUAL "NUMBER" "${w}: copy_fraction is ${ct}, expected a number")
  endif()
  if(w STREQUAL "copy")
    string(JSON cf GET "${json}" results ${i} copy_fraction)
    expect(cf EQUAL 1 "copy: copy_fraction is ${cf}, expected 1")
  endif()
endforeach()
list(JOIN seen "," seen)
expect(seen STREQUAL "copy,gelu,dispatch" "workloads in the JSON: ${seen}")

# Interp mode (recorded, flushed, interpreted; no JIT) next to eager: each workload runs in both
# modes, checks its result in both, and its interp row carries the speedup over the same run's
# eager row and the region-cache hits and misses of its runs.
file(REMOVE "${OUT}")
execute_process(
  COMMAND "${KILN_PERF}" --size small --workloads copy,gelu,dispatch --modes eager,interp
          --reps 3 --json "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
message("${table}")
expect(rc EQUAL 0 "kiln-perf --modes eager,interp exited with ${rc}: ${progress}")
file(READ "${OUT}" json)
string(JSON n LENGTH "${json}" results)
expect(n EQUAL 6 "expected 6 results with --modes eager,interp, got ${n}")
set(seen "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  expect_required_keys("${json}" ${i} "interp run: ")
  string(JSON w GET "${json}" results ${i} workload)
  string(JSON mode GET "${json}" results ${i} mode)
  list(APPEND seen "${w}:${mode}")
  string(JSON lo GET "${json}" results ${i} min_ms)
  expect("${lo}" GREATER 0 "${w} ${mode}: min_ms ${lo} is not positive")
  foreach(key speedup_vs_eager region_hits region_misses region_uncached)
    string(JSON type ERROR_VARIABLE err TYPE "${json}" results ${i} ${key})
    expect(NOT err "${w} ${mode}: no key '${key}'")
    if(mode STREQUAL "eager")
      expect(type STREQUAL "NULL" "${w} eager: ${key} is ${type}, expected null")
    else()
      expect(type STREQUAL "NUMBER" "${w} interp: ${key} is ${type}, expected a number")
    endif()
  endforeach()
  if(mode STREQUAL "interp")
    string(JSON speedup GET "${json}" results ${i} speedup_vs_eager)
    string(JSON hits GET "${json}" results ${i} region_hits)
    string(JSON misses GET "${json}" results ${i} region_misses)
    expect("${speedup}" GREATER 0 "${w} interp: speedup_vs_eager ${speedup} is not positive")
    # The first call records a graph the cache has not seen; the 5 later runs (2 warm-up, 3
    # timed) record the same graph again and must find its region.
    expect(misses GREATER_EQUAL 1 "${w} interp: ${misses} region misses, expected at least 1")
    expect(hits GREATER_EQUAL 5 "${w} interp: ${hits} region hits, expected at least 5")
  endif()
endforeach()
list(JOIN seen "," seen)
expect(seen STREQUAL "copy:eager,copy:interp,gelu:eager,gelu:interp,dispatch:eager,dispatch:interp"
       "interp run: results in the JSON: ${seen}")
foreach(col "vs eager" "regions hit/miss")
  string(FIND "${table}" "${col}" at)
  expect(NOT at EQUAL -1 "the eager,interp table has no '${col}' column")
endforeach()

# The loop and region workloads in both modes (each checks its result against a scalar reference
# in both), plus compile_latency: no figures of its own, a "compile_latency" object of first calls.
file(REMOVE "${OUT}")
execute_process(
  COMMAND "${KILN_PERF}" --size small --workloads rnn_loop,rnn_scan,newton,compile_layers,compile_latency
          --modes eager,interp --reps 2 --warmup 1 --json "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
message("${table}")
expect(rc EQUAL 0 "kiln-perf loop/region workloads exited with ${rc}: ${progress}")
file(READ "${OUT}" json)
string(JSON n LENGTH "${json}" results)
expect(n EQUAL 10 "expected 10 results (rnn_loop, rnn_scan, newton, compile_layers x 2, two modes each), got ${n}")
set(seen "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  expect_required_keys("${json}" ${i} "loop run: ")
  string(JSON w GET "${json}" results ${i} workload)
  string(JSON mode GET "${json}" results ${i} mode)
  string(JSON lo GET "${json}" results ${i} min_ms)
  string(JSON first GET "${json}" results ${i} first_call_ms)
  expect("${lo}" GREATER 0 "${w} ${mode}: min_ms ${lo} is not positive")
  expect("${first}" GREATER 0 "${w} ${mode}: first_call_ms ${first} is not positive")
  string(JSON gt TYPE "${json}" results ${i} gbps)
  expect(gt STREQUAL "NULL" "${w}: gbps should be null, is ${gt}")
  string(JSON layers ERROR_VARIABLE err GET "${json}" results ${i} layers)
  if(w STREQUAL "compile_layers")
    expect(NOT err "compile_layers ${mode}: no key 'layers'")
    set(w "${w}${layers}")
  else()
    expect(err "${w}: unexpected key 'layers'")
  endif()
  if(mode STREQUAL "interp")
    string(JSON misses GET "${json}" results ${i} region_misses)
    string(JSON hits GET "${json}" results ${i} region_hits)
    expect(misses GREATER_EQUAL 1 "${w} interp: ${misses} region misses, expected at least 1")
    expect(hits GREATER_EQUAL 3 "${w} interp: ${hits} region hits, expected at least 3")
  endif()
  list(APPEND seen "${w}:${mode}")
endforeach()
list(JOIN seen "," seen)
expect(seen STREQUAL "rnn_loop:eager,rnn_loop:interp,rnn_scan:eager,rnn_scan:interp,newton:eager,newton:interp,compile_layers1:eager,compile_layers1:interp,compile_layers4:eager,compile_layers4:interp"
       "loop run: results in the JSON: ${seen}")
string(JSON cache TYPE "${json}" compile_latency disk_cache)
expect(cache STREQUAL "NULL" "compile_latency: disk_cache is ${cache}, expected null (no JIT yet)")
string(JSON n LENGTH "${json}" compile_latency first_calls)
expect(n EQUAL 10 "compile_latency: expected 10 first calls, got ${n}")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  foreach(key workload mode device first_call_ms median_ms first_over_median)
    string(JSON type ERROR_VARIABLE err TYPE "${json}" compile_latency first_calls ${i} ${key})
    expect(NOT err "compile_latency first call ${i} has no key '${key}'")
  endforeach()
endforeach()
foreach(text "compile_latency: first call" "compile_layers [layers=4]" "no disk cache")
  string(FIND "${table}" "${text}" at)
  expect(NOT at EQUAL -1 "the loop run's output lacks '${text}'")
endforeach()

# Not-yet-available requests: status 2 and a message that says what is missing.
foreach(case "--modes;jit|mode jit is not available yet: the CPU JIT is not built yet"
             "--modes;eager,jit|mode jit is not available yet: the CPU JIT is not built yet"
             "--devices;cuda|device cuda is not available yet"
             "--workloads;nosuch|unknown workload 'nosuch'"
             "--reps;0|--reps: expected an integer >= 1"
             "--json;/nonexistent-dir/x.json|--json: cannot open '/nonexistent-dir/x.json' for writing")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 flag)
  list(GET parts 1 value)
  list(GET parts 2 want)
  execute_process(COMMAND "${KILN_PERF}" ${flag} ${value} --size small --reps 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect(rc EQUAL 2 "'${flag} ${value}' exited with '${rc}', expected 2 (${err})")
  string(FIND "${err}" "${want}" at)
  expect(NOT at EQUAL -1 "'${flag} ${value}': message '${err}' lacks '${want}'")
endforeach()

execute_process(COMMAND "${KILN_PERF}" --list RESULT_VARIABLE rc OUTPUT_VARIABLE out)
expect(rc EQUAL 0 "--list exited with ${rc}")
foreach(w copy gelu layernorm softmax mlp_train block rnn_loop rnn_scan newton dispatch
          compile_layers compile_latency)
  string(FIND "${out}" "${w}" at)
  expect(NOT at EQUAL -1 "--list does not show ${w}")
endforeach()

if(NOT WITH_LIBTORCH)
  execute_process(COMMAND "${KILN_PERF}" --modes eager,libtorch --size small --reps 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect(rc EQUAL 2 "'--modes eager,libtorch' without libtorch exited with '${rc}', expected 2")
  string(FIND "${err}" "-DKILN_WITH_LIBTORCH=ON" at)
  expect(NOT at EQUAL -1 "'--modes libtorch': message '${err}' does not say how to build it")
else()
  file(REMOVE "${OUT}")
  execute_process(
    COMMAND "${KILN_PERF}" --size small --workloads gelu,dispatch,rnn_loop,newton
            --modes eager,libtorch --reps 3 --json "${OUT}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
  message("${table}")
  expect(rc EQUAL 0 "kiln-perf --modes eager,libtorch exited with ${rc}: ${progress}")
  file(READ "${OUT}" json)
  string(JSON n LENGTH "${json}" results)
  # copy (reference) for each mode, then gelu, dispatch, rnn_loop and newton in each mode.
  expect(n EQUAL 10 "expected 10 results with --modes eager,libtorch, got ${n}")
  set(seen "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    expect_required_keys("${json}" ${i} "libtorch run: ")
    string(JSON w GET "${json}" results ${i} workload)
    string(JSON mode GET "${json}" results ${i} mode)
    string(JSON lo GET "${json}" results ${i} min_ms)
    expect("${lo}" GREATER 0 "${w} ${mode}: min_ms ${lo} is not positive")
    list(APPEND seen "${w}:${mode}")
  endforeach()
  list(JOIN seen "," seen)
  expect(seen STREQUAL "copy:eager,copy:libtorch,gelu:eager,gelu:libtorch,dispatch:eager,dispatch:libtorch,rnn_loop:eager,rnn_loop:libtorch,newton:eager,newton:libtorch"
         "libtorch run: results in the JSON: ${seen}")
  string(FIND "${table}" "kiln eager vs libtorch" at)
  expect(NOT at EQUAL -1 "the table has no kiln eager vs libtorch comparison")
  # Workloads libtorch has no equivalent of are refused when asked for by name.
  execute_process(COMMAND "${KILN_PERF}" --workloads rnn_scan --modes libtorch --size small --reps 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect(rc EQUAL 2 "'--workloads rnn_scan --modes libtorch' exited with '${rc}', expected 2")
  string(FIND "${err}" "workload rnn_scan has no libtorch version" at)
  expect(NOT at EQUAL -1 "'--workloads rnn_scan --modes libtorch': message '${err}'")
endif()
message(STATUS "kiln-perf JSON and error statuses OK")
