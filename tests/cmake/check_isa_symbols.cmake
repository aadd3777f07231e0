# The per-ISA kernel objects (ops/cpu/*_kernels.cpp built with -mavx2 / -mavx512*) must not emit
# weak (inline or template) symbols outside their ISA namespace: the linker keeps one copy of each
# weak symbol across the whole program, and an AVX-512 copy chosen for baseline code would crash
# CPUs without AVX-512. Weak symbols inside an ISA namespace (`isa_avx2::`, `isa_avx512::`) are
# unique to that ISA and fine.
# Usage: cmake -DNM=<nm> -DOBJECTS=<obj;obj;...> -P check_isa_symbols.cmake
foreach(obj IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} -C ${obj} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${obj}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [WVwv] [^\n]*" all_weak "${syms}")
  set(weak "")
  foreach(sym IN LISTS all_weak)
    if(NOT sym MATCHES "::isa_(avx2|avx512)::" AND NOT sym MATCHES "DW\\.ref\\.__gxx_personality_v0")
      list(APPEND weak "${sym}")
    endif()
  endforeach()
  if(weak)
    string(REPLACE ";" "\n  " listed "${weak}")
    message(FATAL_ERROR "${obj} defines weak symbols shared with other ISAs:\n  ${listed}\n"
                        "Keep kernel helpers in an anonymous namespace or the ISA namespace.")
  endif()
endforeach()
message(STATUS "ISA kernel objects define no weak symbols")
