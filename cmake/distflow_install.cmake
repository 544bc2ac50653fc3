# `cmake --install`: the public headers, the static libraries of every layer the `distflow` target
# links, an exported target set (distflow::distflow and one target per layer, such as
# distflow::train) and a package config, so that another project can write
#
#   find_package(distflow REQUIRED)
#   target_link_libraries(app PRIVATE distflow::distflow)
#
# The libraries stay static, as they are built: one archive per layer keeps the layering enforced by
# the linker, and a program linked against them carries no distflow shared object to deploy with it
# to every host of a cluster.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DISTFLOW_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/distflow)
# Generated message headers go below the public headers, in their own root, because they include
# one another as "proto/<name>.pb.h". The public headers only forward-declare these messages; a
# program needs them to call the functions that take a GraphDef or a ClusterDef.
set(DISTFLOW_INSTALL_GENERATED_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/distflow/generated)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/distflow
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${CMAKE_BINARY_DIR}/gen/proto
  DESTINATION ${DISTFLOW_INSTALL_GENERATED_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.pb.h" PATTERN "*.grpc.pb.h" EXCLUDE)
# The formats themselves, for readers in other languages (docs/formats.md describes them).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/distflow/proto
  FILES_MATCHING PATTERN "*.proto")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Appends to `out_var` the library targets of this project that `target` links, directly or
# through others (LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES, generator expressions included).
function(distflow_link_closure target out_var)
  set(seen ${${out_var}})
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue t)
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      set(t ${aliased})
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(type ${t} TYPE)
    set(links)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${t} LINK_LIBRARIES)
    endif()
    get_target_property(interface_links ${t} INTERFACE_LINK_LIBRARIES)
    foreach(item IN LISTS links interface_links)
      # Items such as $<LINK_LIBRARY:WHOLE_ARCHIVE,distflow_rpc_session> or $<LINK_ONLY:x>.
      string(REGEX MATCHALL "[A-Za-z0-9_.+:-]+" words "${item}")
      foreach(word IN LISTS words)
        if(TARGET ${word})
          list(APPEND queue ${word})
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

# Runs once every directory has been read, so that it sees the targets added after this file, such
# as the command-line tool.
function(distflow_install_targets)
  set(libraries)
  distflow_link_closure(distflow libraries)
  foreach(t IN LISTS libraries)
    # distflow_train is exported as distflow::train; the umbrella stays distflow::distflow.
    string(REGEX REPLACE "^distflow_" "" export_name ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name})
  endforeach()
  # install(EXPORT) renames the targets a target links, but not one inside
  # $<LINK_LIBRARY:feature,target> (such as the "grpc://" session, linked whole): give those their
  # exported name in the installed package, and leave the build tree as it is.
  foreach(t IN LISTS libraries)
    get_target_property(links ${t} INTERFACE_LINK_LIBRARIES)
    if(NOT links)
      continue()
    endif()
    set(rewritten)
    foreach(item IN LISTS links)
      if(item MATCHES "^\\$<LINK_LIBRARY:([^,>]+),([^,>]+)>$" AND CMAKE_MATCH_2 IN_LIST libraries)
        set(feature ${CMAKE_MATCH_1})
        get_target_property(linked_export_name ${CMAKE_MATCH_2} EXPORT_NAME)
        list(APPEND rewritten "$<BUILD_INTERFACE:${item}>"
          "$<INSTALL_INTERFACE:$<LINK_LIBRARY:${feature},distflow::${linked_export_name}>>")
      else()
        list(APPEND rewritten "${item}")
      endif()
    endforeach()
    set_property(TARGET ${t} PROPERTY INTERFACE_LINK_LIBRARIES "${rewritten}")
  endforeach()
  install(TARGETS ${libraries} EXPORT distflowTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${DISTFLOW_INSTALL_GENERATED_INCLUDEDIR})
  install(EXPORT distflowTargets NAMESPACE distflow:: DESTINATION ${DISTFLOW_INSTALL_CMAKEDIR})

  # The `distflow` command: whichever executable target is built as bin/distflow.
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      get_target_property(type ${t} TYPE)
      get_target_property(output_name ${t} OUTPUT_NAME)
      if(type STREQUAL "EXECUTABLE" AND (output_name STREQUAL "distflow" OR t STREQUAL "distflow_cli"))
        install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
      endif()
    endforeach()
  endwhile()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL distflow_install_targets)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/distflowConfig.cmake.in
  ${CMAKE_BINARY_DIR}/distflowConfig.cmake
  INSTALL_DESTINATION ${DISTFLOW_INSTALL_CMAKEDIR})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/distflowConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/distflowConfig.cmake ${CMAKE_BINARY_DIR}/distflowConfigVersion.cmake
  DESTINATION ${DISTFLOW_INSTALL_CMAKEDIR})
