# Packaging.cmake - the Debian package (CPack DEB): holdfast_<version>-<rev>_<arch>.deb
#
#   cmake --build build --target package      # or: (cd build && cpack)
#
# Include after add_subdirectory(daemon): the holdfastd and holdfastctl
# install() rules live in daemon/CMakeLists.txt (sbin, bin under the prefix);
# this file installs everything else an operator needs and sets up CPack.
# The package installs under /usr, with the config in /etc and the units in
# /lib/systemd/system (Debian 12 layout), so `cmake --install` writes those
# two absolute paths too: stage with DESTDIR, or install the .deb.
include_guard(GLOBAL)

set(HOLDFAST_DEB_RELEASE "1" CACHE STRING "Debian revision of the holdfast package")
set(HOLDFAST_DEB_MAINTAINER "The holdfast authors <holdfast@example.org>"
    CACHE STRING "Maintainer field of the holdfast package")
set(HOLDFAST_DEB_VERSION "${PROJECT_VERSION}-${HOLDFAST_DEB_RELEASE}")

set(_hf_deploy ${PROJECT_SOURCE_DIR}/deploy)
set(_hf_stage ${PROJECT_BINARY_DIR}/packaging)

# Directories the package creates are 0755 whatever the builder's umask.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# --- generated documents: changelog and man pages, gzip -9n (no timestamp) --
# The changelog date honours SOURCE_DATE_EPOCH for reproducible packages.
string(TIMESTAMP HOLDFAST_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(HOLDFAST_VERSION ${PROJECT_VERSION})
configure_file(${_hf_deploy}/debian/changelog.in ${_hf_stage}/changelog.Debian @ONLY)
configure_file(${_hf_deploy}/debian/man/holdfastd.8 ${_hf_stage}/holdfastd.8 @ONLY)
configure_file(${_hf_deploy}/debian/man/holdfastctl.1 ${_hf_stage}/holdfastctl.1 @ONLY)

find_program(HOLDFAST_GZIP gzip REQUIRED)
set(_hf_gz_outputs)
foreach(_hf_doc_file changelog.Debian holdfastd.8 holdfastctl.1)
  add_custom_command(
    OUTPUT ${_hf_stage}/${_hf_doc_file}.gz
    COMMAND ${HOLDFAST_GZIP} -9nfk ${_hf_stage}/${_hf_doc_file}
    DEPENDS ${_hf_stage}/${_hf_doc_file}
    COMMENT "Compressing ${_hf_doc_file} for the package"
    VERBATIM)
  list(APPEND _hf_gz_outputs ${_hf_stage}/${_hf_doc_file}.gz)
endforeach()
add_custom_target(holdfast_package_docs ALL DEPENDS ${_hf_gz_outputs})

# --- install rules (binaries: daemon/CMakeLists.txt) ---
file(GLOB _hf_scripts CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/*.lua)
install(FILES ${_hf_scripts} DESTINATION share/holdfast/scripts)

# Migrations are optional in the tree; the directory appears once they exist.
file(GLOB _hf_migrations CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/daemon/sql/migrations/*.sql)
if(_hf_migrations)
  install(FILES ${_hf_migrations} DESTINATION share/holdfast/migrations)
endif()

install(FILES ${_hf_deploy}/holdfast.lua DESTINATION /etc/holdfast)
install(FILES
          ${_hf_deploy}/systemd/holdfastd.service
          ${_hf_deploy}/systemd/holdfastd.socket
          ${_hf_deploy}/systemd/holdfast-metrics.service
          ${_hf_deploy}/systemd/holdfast-metrics.timer
        DESTINATION /lib/systemd/system)
install(FILES ${_hf_deploy}/sysusers.d/holdfast.conf DESTINATION lib/sysusers.d)
install(PROGRAMS ${_hf_deploy}/metrics-textfile.sh DESTINATION libexec/holdfast
        RENAME metrics-textfile)
install(FILES ${_hf_stage}/holdfastd.8.gz DESTINATION share/man/man8)
install(FILES ${_hf_stage}/holdfastctl.1.gz DESTINATION share/man/man1)
# copyright: DEP-5, Apache-2.0 (the text is Debian's common-licenses/Apache-2.0);
# NOTICE: the attribution notice Apache-2.0 asks redistributors to keep.
install(FILES ${_hf_deploy}/debian/copyright ${PROJECT_SOURCE_DIR}/NOTICE
              ${_hf_stage}/changelog.Debian.gz
        DESTINATION share/doc/holdfast)
install(FILES ${_hf_deploy}/debian/lintian-overrides DESTINATION share/lintian/overrides
        RENAME holdfast)
if(EXISTS ${PROJECT_SOURCE_DIR}/docs/operations.md)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md DESTINATION share/doc/holdfast)
endif()

# --- CPack ---
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "holdfast")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "The holdfast authors")
set(CPACK_PACKAGE_CONTACT "${HOLDFAST_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}")
# Only the one component: everything above goes into one package.
set(CPACK_DEB_COMPONENT_INSTALL OFF)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE "${HOLDFAST_DEB_RELEASE}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${HOLDFAST_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "sidecar daemon for expiring holds on scarce resources
holdfastd gives applications safe, fast, expiring holds on scarce resources
(a seat on one run of a train or show, a unit of stock, a critical section)
with Redis as the arbiter and PostgreSQL as the system of record.
Applications call it over a Unix socket with protobuf messages.
.
This package contains the daemon, the holdfastctl operator tool, the Redis
Functions library, the PostgreSQL migrations, systemd units with socket
activation, and a default configuration.")
# Library dependencies from dpkg-shlibdeps; adduser for the postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server, postgresql, prometheus-node-exporter")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${_hf_deploy}/debian/conffiles
    ${_hf_deploy}/debian/postinst
    ${_hf_deploy}/debian/prerm
    ${_hf_deploy}/debian/postrm)
# Maintainer scripts 0755, other control files 0644, as dpkg expects.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
