# What `cmake --install` and cpack put where, in GNUInstallDirs' folders.
# Components: "runtime" (bin/p2pshim and the library, installed by their own
# folders; all the Python wheel takes) and "doc" (README, LICENSE, docs/,
# the man page, bash completion). Nothing else is installed: not p2pdemo,
# not the benchmarks (tools/bench), not measured data (tools/bench/results
# holds the curated runs, for readers of the repository).
install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(FILES tools/launcher/completion/p2pshim.bash RENAME p2pshim COMPONENT doc
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions)

# The man page, made from docs/LAUNCHER.md by tools/dev/md2man.py (Python's
# standard library only), with an ENVIRONMENT section that the build prints
# from the shim's table of variables (p2pshim_man_env, tools/launcher/man_env.c):
# the page lists every variable the shim reads and cannot drift from it.
# Without Python the build goes on without it.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(P2PSHIM_MAN_PAGE ${PROJECT_BINARY_DIR}/man/p2pshim.1)
  set(P2PSHIM_MAN_ENV ${PROJECT_BINARY_DIR}/man/environment.md)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/man)
  add_custom_command(
    OUTPUT ${P2PSHIM_MAN_ENV}
    COMMAND p2pshim_man_env > ${P2PSHIM_MAN_ENV}
    DEPENDS p2pshim_man_env
    COMMENT "Printing the man page's ENVIRONMENT section from the table of variables")
  add_custom_command(
    OUTPUT ${P2PSHIM_MAN_PAGE}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/dev/md2man.py
            --version ${PROJECT_VERSION} --environment ${P2PSHIM_MAN_ENV}
            ${PROJECT_SOURCE_DIR}/docs/LAUNCHER.md -o ${P2PSHIM_MAN_PAGE}
    DEPENDS ${PROJECT_SOURCE_DIR}/tools/dev/md2man.py ${PROJECT_SOURCE_DIR}/docs/LAUNCHER.md
            ${P2PSHIM_MAN_ENV}
    COMMENT "Generating the man page p2pshim.1 from docs/LAUNCHER.md")
  add_custom_target(p2pshim_man ALL DEPENDS ${P2PSHIM_MAN_PAGE})
  install(FILES ${P2PSHIM_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT doc)
else()
  message(STATUS "python3 not found: the man page is not built")
endif()

# ---- cpack: .deb always, .rpm where rpmbuild is found ----
set(P2PSHIM_PACKAGE_CONTACT "p2pshim maintainers <p2pshim@localhost>" CACHE STRING
    "Maintainer field of the .deb and .rpm packages")
set(CPACK_PACKAGE_NAME p2pshim)
set(CPACK_PACKAGE_VENDOR p2pshim)
set(CPACK_PACKAGE_CONTACT "${P2PSHIM_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "CUDA GPU-to-GPU copies over the peer link for unmodified programs (LD_PRELOAD)")
set(CPACK_PACKAGE_DESCRIPTION
    "libp2pshim.so makes an unmodified CUDA program's GPU-to-GPU copies ride the \
direct peer link (NVLink) instead of being staged through host memory, and the \
p2pshim launcher runs programs under it and reports what they move between GPUs.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The runtime and doc components only, in one package.
set(CPACK_INSTALL_CMAKE_PROJECTS
    "${PROJECT_BINARY_DIR};p2pshim;runtime;/" "${PROJECT_BINARY_DIR};p2pshim;doc;/")
set(CPACK_GENERATOR DEB)
find_program(P2PSHIM_RPMBUILD rpmbuild)
if(P2PSHIM_RPMBUILD)
  list(APPEND CPACK_GENERATOR RPM)
endif()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The launcher loads libcuda and NVML at run time: only libc is linked.
find_program(P2PSHIM_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(P2PSHIM_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6")
endif()

set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "Apache-2.0")
set(CPACK_RPM_PACKAGE_GROUP "Development/Tools")
# No /usr/lib/.build-id links: the package holds what it installs, no more.
set(CPACK_RPM_SPEC_MORE_DEFINE "%define _build_id_links none")
# Folders the system's own packages own.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    /usr/share/bash-completion /usr/share/bash-completion/completions
    /usr/share/man /usr/share/man/man1)

set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git" "/build" "/\\\\.deps/" "/\\\\.whl/" "/out/")
include(CPack)
