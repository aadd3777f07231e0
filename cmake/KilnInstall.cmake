# cmake --install: the static library, the headers (under include/kiln, layer folders kept) and a
# package config for find_package(kiln CONFIG).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS kiln EXPORT kilnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/kiln/kiln.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
# Directories, not a configure-time glob: headers added since the last configure are installed
# too. The public headers include each other as "runtime/x.h", hence include/kiln on the path.
foreach(layer runtime ops tracer jit)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${layer})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln
            FILES_MATCHING PATTERN "*.h")
  endif()
endforeach()
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
configure_package_config_file(cmake/kilnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
              cmake/KilnDependencies.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
