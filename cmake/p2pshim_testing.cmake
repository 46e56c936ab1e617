# Helpers shared by every test folder.
#
# P2PSHIM_PRELOAD: the LD_PRELOAD value that puts the shim in front of a test
# program (with the sanitizer runtime first in sanitizer builds, as ASan and
# TSan must come first in the initial library list).
# P2PSHIM_STANDIN_DIR: folder holding the stand-in libcuda.so.1.
set(P2PSHIM_STANDIN_DIR ${CMAKE_BINARY_DIR}/standin-lib)
# P2PSHIM_STANDIN_NVML_DIR: folder holding the stand-in libnvidia-ml.so.1,
# apart from the driver's, so that only the tests that ask find it.
set(P2PSHIM_STANDIN_NVML_DIR ${CMAKE_BINARY_DIR}/standin-nvml)
# P2PSHIM_STANDIN_CUPTI_DIR: folder holding the stand-in libcupti.so, apart
# too: only the tests of the CUPTI join find it.
set(P2PSHIM_STANDIN_CUPTI_DIR ${CMAKE_BINARY_DIR}/standin-cupti)
if(P2PSHIM_SANITIZER_RUNTIME)
  set(P2PSHIM_PRELOAD "${P2PSHIM_SANITIZER_RUNTIME}:$<TARGET_FILE:p2pshim>")
  set(P2PSHIM_SANITIZER_PRELOAD "${P2PSHIM_SANITIZER_RUNTIME}")
else()
  set(P2PSHIM_PRELOAD "$<TARGET_FILE:p2pshim>")
  set(P2PSHIM_SANITIZER_PRELOAD "")
endif()

# p2pshim_add_test(NAME name COMMAND cmd... [PRELOAD] [STANDIN] [LABELS l...]
#                  [ENV VAR=value...] [SKIP_RETURN_CODE n])
# PRELOAD: run with the shim preloaded. STANDIN: the stand-in driver is
# found first on LD_LIBRARY_PATH. Every test gets a timeout.
function(p2pshim_add_test)
  cmake_parse_arguments(T "PRELOAD;STANDIN" "NAME;SKIP_RETURN_CODE;TIMEOUT"
                        "COMMAND;LABELS;ENV" ${ARGN})
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set(env ${T_ENV})
  if(T_PRELOAD)
    list(APPEND env "LD_PRELOAD=${P2PSHIM_PRELOAD}")
  elseif(P2PSHIM_SANITIZER_PRELOAD AND T_STANDIN)
    list(APPEND env "LD_PRELOAD=${P2PSHIM_SANITIZER_PRELOAD}")
  endif()
  if(T_STANDIN)
    list(APPEND env "LD_LIBRARY_PATH=${P2PSHIM_STANDIN_DIR}")
  endif()
  # The link check before a pair's first upgrade (docs/TRUST.md) does
  # copies, allocations and events of its own, which the stand-in counts
  # with the program's, and keeps verdicts in the user's cache: tests that
  # count the program's work exactly run without it. tests/trust checks
  # it, and sets P2PSHIM_TRUST itself.
  if(NOT "${T_ENV}" MATCHES "P2PSHIM_TRUST=")
    list(APPEND env "P2PSHIM_TRUST=skip")
  endif()
  if(P2PSHIM_SANITIZE STREQUAL "address")
    # Programs that are not instrumented run with the runtime preloaded.
    list(APPEND env "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${env}"
                       TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
  if(T_SKIP_RETURN_CODE)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE ${T_SKIP_RETURN_CODE})
  endif()
endfunction()
