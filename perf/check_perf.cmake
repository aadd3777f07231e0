# Checks kiln-perf (run with cmake -DKILN_PERF=... -DOUT=... -DWITH_LIBTORCH=ON|OFF -P
# check_perf.cmake):
#  1. a short run writes JSON whose results carry every key BENCHMARKS.md fixes, with sane values,
#     and the ceiling row (the better of copy_ and a streaming copy, mode native) that every
#     copy_fraction is against (ceiling_gbps);
#  2. a short eager,interp,jit run: interp and jit rows with the same keys plus speedup_vs_eager
#     and the region-cache hits and misses; jit rows also the kernels compiled and their compile
#     times (kernels_compiled, compile_us_median, compile_us_max), and the jit summary table;
#  3. the loop, control-flow and region workloads (rnn_loop, rnn_scan, newton, compile_layers with
#     one figure per layer count) in the three modes, and the compile_latency summary of first
#     calls;
#  4. requests that are not available yet exit with status 2 and say why (never a crash);
#  5. mode libtorch: without KILN_WITH_LIBTORCH, status 2 and how to build it; with it, a short
#     eager,libtorch run gives libtorch rows with the same keys at 1 and 2 threads
#     (libtorch_threads), and the side-by-side table against libtorch's faster count.
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
expect(n EQUAL 4 "expected 4 results (copy, ceiling, gelu, dispatch), got ${n}")
set(seen "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  expect_required_keys("${json}" ${i} "")
  string(JSON w GET "${json}" results ${i} workload)
  string(JSON mode GET "${json}" results ${i} mode)
  string(JSON dev GET "${json}" results ${i} device)
  if(w STREQUAL "ceiling")
    expect(mode STREQUAL "native" "ceiling: mode is '${mode}', expected native")
  else()
    expect(mode STREQUAL "eager" "result ${i}: mode is '${mode}'")
  endif()
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
  string(JSON cgt TYPE "${json}" results ${i} ceiling_gbps)
  if(w STREQUAL "dispatch")
    expect(gt STREQUAL "NULL" "dispatch: gbps should be null, is ${gt}")
    expect(ct STREQUAL "NULL" "dispatch: copy_fraction should be null, is ${ct}")
    expect(cgt STREQUAL "NULL" "dispatch: ceiling_gbps should be null, is ${cgt}")
    string(JSON us GET "${json}" results ${i} us_per_op)
    expect("${us}" GREATER 0 "dispatch: us_per_op ${us} is not positive")
  else()
    expect(gt STREQUAL "NUMBER" "${w}: gbps is ${gt}, expected a number")
    expect(ct STREQUAL "NUMBER" "${w}: copy_fraction is ${ct}, expected a number")
    expect(cgt STREQUAL "NUMBER" "${w}: ceiling_gbps is ${cgt}, expected a number")
    # copy_fraction is the figure's GB/s over the same run's ceiling, the better of copy_ and
    # the streaming copy: at most 1 for both copies, exactly 1 for the ceiling itself.
    string(JSON g GET "${json}" results ${i} gbps)
    string(JSON cf GET "${json}" results ${i} copy_fraction)
    string(JSON cg GET "${json}" results ${i} ceiling_gbps)
    expect("${cf}" GREATER 0 "${w}: copy_fraction ${cf} is not positive")
  endif()
  if(w STREQUAL "copy")
    string(JSON cf GET "${json}" results ${i} copy_fraction)
    expect("${cf}" LESS_EQUAL 1 "copy: copy_fraction is ${cf}, expected at most 1")
  elseif(w STREQUAL "ceiling")
    string(JSON cf GET "${json}" results ${i} copy_fraction)
    expect(cf EQUAL 1 "ceiling: copy_fraction is ${cf}, expected 1")
    string(JSON st TYPE "${json}" results ${i} stream_gbps)
    expect(st STREQUAL "NUMBER" "ceiling: stream_gbps is ${st}, expected a number")
    string(JSON from GET "${json}" results ${i} ceiling_from)
    expect(from MATCHES "^(stream|copy_ eager)$" "ceiling: ceiling_from is '${from}'")
    string(JSON ref GET "${json}" results ${i} reference_only)
    expect(ref STREQUAL "ON" "ceiling: reference_only is '${ref}' (added for % ceiling)")
  endif()
endforeach()
list(JOIN seen "," seen)
expect(seen STREQUAL "copy,ceiling,gelu,dispatch" "workloads in the JSON: ${seen}")
string(FIND "${table}" "ceiling (cpu) = the better of a streaming copy" at)
expect(NOT at EQUAL -1 "the table does not say what the ceiling is")

# Interp mode (recorded, flushed, interpreted; no JIT) and jit mode (recorded, planned and
# compiled at first sight) next to eager: each workload runs in every mode, checks its result in
# each, and its interp and jit rows carry the speedup over the same run's eager row and the
# region-cache hits and misses of its runs; jit rows also the kernels compiled for the job and
# their compile times. The ceiling's streaming copy runs once, in mode native.
file(REMOVE "${OUT}")
execute_process(
  COMMAND "${KILN_PERF}" --size small --workloads copy,gelu,dispatch --modes eager,interp,jit
          --reps 3 --json "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
message("${table}")
expect(rc EQUAL 0 "kiln-perf --modes eager,interp,jit exited with ${rc}: ${progress}")
file(READ "${OUT}" json)
string(JSON n LENGTH "${json}" results)
expect(n EQUAL 10 "expected 10 results with --modes eager,interp,jit, got ${n}")
set(seen "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  expect_required_keys("${json}" ${i} "interp/jit run: ")
  string(JSON w GET "${json}" results ${i} workload)
  string(JSON mode GET "${json}" results ${i} mode)
  list(APPEND seen "${w}:${mode}")
  string(JSON lo GET "${json}" results ${i} min_ms)
  string(JSON first GET "${json}" results ${i} first_call_ms)
  expect("${lo}" GREATER 0 "${w} ${mode}: min_ms ${lo} is not positive")
  expect("${first}" GREATER 0 "${w} ${mode}: first_call_ms ${first} is not positive")
  foreach(key speedup_vs_eager region_hits region_misses region_uncached)
    string(JSON type ERROR_VARIABLE err TYPE "${json}" results ${i} ${key})
    expect(NOT err "${w} ${mode}: no key '${key}'")
    if(mode STREQUAL "eager" OR mode STREQUAL "native")
      expect(type STREQUAL "NULL" "${w} ${mode}: ${key} is ${type}, expected null")
    else()
      expect(type STREQUAL "NUMBER" "${w} ${mode}: ${key} is ${type}, expected a number")
    endif()
  endforeach()
  foreach(key kernels_compiled launches_per_run compile_us_median compile_us_max compile_us_total)
    string(JSON type ERROR_VARIABLE err TYPE "${json}" results ${i} ${key})
    expect(NOT err "${w} ${mode}: no key '${key}'")
    if(NOT mode STREQUAL "jit")
      expect(type STREQUAL "NULL" "${w} ${mode}: ${key} is ${type}, expected null")
    elseif(key STREQUAL "kernels_compiled" OR key STREQUAL "launches_per_run")
      expect(type STREQUAL "NUMBER" "${w} jit: ${key} is ${type}, expected a number")
    endif()
  endforeach()
  if(mode STREQUAL "interp" OR mode STREQUAL "jit")
    string(JSON speedup GET "${json}" results ${i} speedup_vs_eager)
    string(JSON hits GET "${json}" results ${i} region_hits)
    string(JSON misses GET "${json}" results ${i} region_misses)
    expect("${speedup}" GREATER 0 "${w} ${mode}: speedup_vs_eager ${speedup} is not positive")
    # Each recording mode starts from an empty region cache: the first call records a graph the
    # cache has not seen; the 5 later runs (2 warm-up, 3 timed) record the same graph again and
    # must find its region. In jit mode the eager tier may time a small job's later runs eagerly
    # (tracer/measured_tier.h: after 2 untimed planned runs and 1 timed): 3 of them at least.
    expect(misses GREATER_EQUAL 1 "${w} ${mode}: ${misses} region misses, expected at least 1")
    if(mode STREQUAL "jit")
      set(min_hits 3)
    else()
      set(min_hits 5)
    endif()
    expect(hits GREATER_EQUAL ${min_hits}
           "${w} ${mode}: ${hits} region hits, expected at least ${min_hits}")
  endif()
  if(mode STREQUAL "jit")
    string(JSON kernels GET "${json}" results ${i} kernels_compiled)
    if(kernels GREATER 0)
      foreach(key compile_us_median compile_us_max compile_us_total)
        string(JSON v GET "${json}" results ${i} ${key})
        expect("${v}" GREATER 0 "${w} jit: ${key} ${v} is not positive")
      endforeach()
      string(JSON med GET "${json}" results ${i} compile_us_median)
      string(JSON worst GET "${json}" results ${i} compile_us_max)
      expect("${med}" LESS_EQUAL "${worst}" "${w} jit: compile median ${med} > max ${worst}")
    else()
      string(JSON type TYPE "${json}" results ${i} compile_us_median)
      expect(type STREQUAL "NULL" "${w} jit: no kernel compiled, compile_us_median is ${type}")
    endif()
    # gelu's pointwise chain (all but tanh) is fused into kernels, compiled in this process for
    # the first time; dispatch's chain of adds too. Both launch kernels in every run.
    if(w STREQUAL "gelu" OR w STREQUAL "dispatch")
      expect(kernels GREATER_EQUAL 1 "${w} jit: ${kernels} kernels compiled, expected some")
      string(JSON launches GET "${json}" results ${i} launches_per_run)
      expect("${launches}" GREATER 0 "${w} jit: no kernel launches in the timed runs")
    endif()
  endif()
endforeach()
list(JOIN seen "," seen)
expect(seen STREQUAL "copy:eager,copy:interp,copy:jit,ceiling:native,gelu:eager,gelu:interp,gelu:jit,dispatch:eager,dispatch:interp,dispatch:jit"
       "interp/jit run: results in the JSON: ${seen}")
foreach(col "vs eager" "regions hit/miss" "jit: first call" "compile µs median")
  string(FIND "${table}" "${col}" at)
  expect(NOT at EQUAL -1 "the eager,interp,jit output has no '${col}'")
endforeach()

# The loop and region workloads in the three modes (each checks its result against a scalar
# reference in each), plus compile_latency: no figures of its own, a "compile_latency" object of
# first calls.
file(REMOVE "${OUT}")
execute_process(
  COMMAND "${KILN_PERF}" --size small --workloads rnn_loop,rnn_scan,newton,compile_layers,compile_latency
          --modes eager,interp,jit --reps 2 --warmup 1 --json "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
message("${table}")
expect(rc EQUAL 0 "kiln-perf loop/region workloads exited with ${rc}: ${progress}")
file(READ "${OUT}" json)
string(JSON n LENGTH "${json}" results)
expect(n EQUAL 15 "expected 15 results (rnn_loop, rnn_scan, newton, compile_layers x 2, three modes each), got ${n}")
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
  if(mode STREQUAL "interp" OR mode STREQUAL "jit")
    string(JSON misses GET "${json}" results ${i} region_misses)
    string(JSON hits GET "${json}" results ${i} region_hits)
    expect(misses GREATER_EQUAL 1 "${w} interp: ${misses} region misses, expected at least 1")
    expect(hits GREATER_EQUAL 3 "${w} interp: ${hits} region hits, expected at least 3")
  endif()
  list(APPEND seen "${w}:${mode}")
endforeach()
list(JOIN seen "," seen)
expect(seen STREQUAL "rnn_loop:eager,rnn_loop:interp,rnn_loop:jit,rnn_scan:eager,rnn_scan:interp,rnn_scan:jit,newton:eager,newton:interp,newton:jit,compile_layers1:eager,compile_layers1:interp,compile_layers1:jit,compile_layers4:eager,compile_layers4:interp,compile_layers4:jit"
       "loop run: results in the JSON: ${seen}")
string(JSON cache GET "${json}" compile_latency disk_cache)
expect(cache STREQUAL "cpu" "compile_latency: disk_cache is '${cache}', expected 'cpu'")
string(JSON n LENGTH "${json}" compile_latency first_calls)
expect(n EQUAL 15 "compile_latency: expected 15 first calls, got ${n}")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  foreach(key workload mode device first_call_ms median_ms first_over_median disk_first_call_ms
          kernels_loaded)
    string(JSON type ERROR_VARIABLE err TYPE "${json}" compile_latency first_calls ${i} ${key})
    expect(NOT err "compile_latency first call ${i} has no key '${key}'")
  endforeach()
  # jit on the CPU: a warm-disk first call and the kernels it loaded; other modes: null.
  string(JSON mode GET "${json}" compile_latency first_calls ${i} mode)
  string(JSON disk_type TYPE "${json}" compile_latency first_calls ${i} disk_first_call_ms)
  if(mode STREQUAL "jit")
    string(JSON disk GET "${json}" compile_latency first_calls ${i} disk_first_call_ms)
    expect(disk GREATER 0 "compile_latency first call ${i}: jit disk_first_call_ms ${disk}")
  else()
    expect(disk_type STREQUAL "NULL" "compile_latency first call ${i}: ${mode} has a disk figure")
  endif()
endforeach()
foreach(text "compile_latency: first call" "compile_layers [layers=4]" "jit disk first ms"
        "CPU kernel disk cache")
  string(FIND "${table}" "${text}" at)
  expect(NOT at EQUAL -1 "the loop run's output lacks '${text}'")
endforeach()

# Not-yet-available requests: status 2 and a message that says what is missing (--devices cuda:
# CI has no GPU, so it says why CUDA is unavailable).
foreach(case "--modes;native|unknown mode 'native'"
             "--devices;cuda|device cuda is not available: "
             "--devices;gpu|unknown device 'gpu'"
             "--devices;cuda:x|unknown device 'cuda:x'"
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
foreach(w copy ceiling gelu layernorm softmax mlp_train block rnn_loop rnn_scan newton dispatch
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
  # With KILN_NUM_THREADS=2 every libtorch workload runs twice: at 1 thread and at 2
  # (libtorch_threads), and the side-by-side table takes the faster per workload.
  file(REMOVE "${OUT}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env KILN_NUM_THREADS=2
            "${KILN_PERF}" --size small --workloads gelu,dispatch,rnn_loop,rnn_scan,newton
            --modes eager,libtorch --reps 3 --json "${OUT}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE progress)
  message("${table}")
  expect(rc EQUAL 0 "kiln-perf --modes eager,libtorch exited with ${rc}: ${progress}")
  file(READ "${OUT}" json)
  string(JSON n LENGTH "${json}" results)
  # copy (reference) for each mode, the ceiling once, then gelu, dispatch, rnn_loop, rnn_scan and
  # newton in each mode, libtorch at 1 and 2 threads.
  expect(n EQUAL 19 "expected 19 results with --modes eager,libtorch, got ${n}")
  set(seen "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    expect_required_keys("${json}" ${i} "libtorch run: ")
    string(JSON w GET "${json}" results ${i} workload)
    string(JSON mode GET "${json}" results ${i} mode)
    string(JSON lo GET "${json}" results ${i} min_ms)
    expect("${lo}" GREATER 0 "${w} ${mode}: min_ms ${lo} is not positive")
    string(JSON tt ERROR_VARIABLE err TYPE "${json}" results ${i} libtorch_threads)
    expect(NOT err "${w} ${mode}: no key 'libtorch_threads'")
    if(mode STREQUAL "libtorch")
      string(JSON t GET "${json}" results ${i} libtorch_threads)
      list(APPEND seen "${w}:${mode}${t}")
    else()
      expect(tt STREQUAL "NULL" "${w} ${mode}: libtorch_threads is ${tt}, expected null")
      list(APPEND seen "${w}:${mode}")
    endif()
  endforeach()
  list(JOIN seen "," seen)
  expect(seen STREQUAL "copy:eager,copy:libtorch1,copy:libtorch2,ceiling:native,gelu:eager,gelu:libtorch1,gelu:libtorch2,dispatch:eager,dispatch:libtorch1,dispatch:libtorch2,rnn_loop:eager,rnn_loop:libtorch1,rnn_loop:libtorch2,rnn_scan:eager,rnn_scan:libtorch1,rnn_scan:libtorch2,newton:eager,newton:libtorch1,newton:libtorch2"
         "libtorch run: results in the JSON: ${seen}")
  string(FIND "${table}" "kiln eager (2 threads) vs libtorch" at)
  expect(NOT at EQUAL -1 "the table has no kiln eager vs libtorch comparison")
  string(FIND "${table}" "libtorch 1T" at)
  expect(NOT at EQUAL -1 "the comparison does not show libtorch at 1 thread")
  string(REGEX MATCH "\nrnn_loop +T 16[^\n]+ [12]T +[0-9.]+x\n" row "${table}")
  expect(row "the comparison has no rnn_loop row with libtorch's faster thread count")
  # Workloads libtorch has no equivalent of are refused when asked for by name.
  execute_process(COMMAND "${KILN_PERF}" --workloads compile_layers --modes libtorch --size small
                          --reps 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  expect(rc EQUAL 2 "'--workloads compile_layers --modes libtorch' exited with '${rc}', expected 2")
  string(FIND "${err}" "workload compile_layers has no libtorch version" at)
  expect(NOT at EQUAL -1 "'--workloads compile_layers --modes libtorch': message '${err}'")
endif()
message(STATUS "kiln-perf JSON and error statuses OK")
