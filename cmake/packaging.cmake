# The .deb: the static oarbank-agent, the systemd unit (a template, one instance per module),
# the commented default /etc/oarbank/agent.json, an example module, and the documents.
# Build it with scripts/package.sh; check it with tests/packaging/check-deb.sh. See
# docs/packaging.md.

set(OARBANK_DOC_DIR share/doc/oarbank-agent)

# Relative destinations land under CPACK_PACKAGING_INSTALL_PREFIX (/usr) in the package.
# lib/systemd/system under /usr: where systemd looks on merged-/usr systems (Debian 12) and
# on split ones alike, and where Debian is moving every unit.
install(FILES packaging/systemd/oarbank-agent@.service packaging/systemd/oarbank.slice
              packaging/systemd/oarbank-nfd.service packaging/systemd/oarbank-nfd.path
        DESTINATION lib/systemd/system)
# What oarbank-nfd.service runs: a helper, not a command for users (so not in /usr/bin).
install(PROGRAMS packaging/nfd/oarbank-nfd-features DESTINATION lib/oarbank-agent)
# Absolute: /etc is not under the prefix. It is a conffile (packaging/debian/conffiles), so
# an upgrade keeps the operator's edits.
install(FILES packaging/agent.json DESTINATION /etc/oarbank)
# Issue 16: bash completion of the sub-commands and options (bash-completion loads it on
# demand from here).
install(FILES packaging/bash-completion/oarbank-agent DESTINATION share/bash-completion/completions)
install(FILES README.md DESTINATION ${OARBANK_DOC_DIR})
install(DIRECTORY docs/ DESTINATION ${OARBANK_DOC_DIR} FILES_MATCHING PATTERN "*.md")
install(FILES packaging/examples/hello.env packaging/examples/hello.policy.json
        DESTINATION ${OARBANK_DOC_DIR}/examples)
install(PROGRAMS examples/hello-module/run.sh DESTINATION ${OARBANK_DOC_DIR}/examples/hello)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME oarbank-agent)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR oarbank)
set(CPACK_PACKAGE_CONTACT "oarbank maintainers <maintainers@users.noreply.a-seed-94f453e5.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Linux sandbox for oarbank modules (Landlock, seccomp, cgroup v2)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Strip the binary: a static executable's symbol table is most of its size, and nothing
# reads it at run time.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The long description; CPack puts the summary above it as the synopsis line.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "oarbank-agent runs third-party modules under Landlock and seccomp, never as root,
in a cgroup v2 leaf of a delegated systemd unit (oarbank-agent@.service), and
reports what the node's kernel can enforce. The package installs the static
binary, the unit template, and a commented default /etc/oarbank/agent.json.")
# The binary is static (OARBANK_STATIC): no shared library to depend on, so dpkg-shlibdeps
# has nothing to find. systemd is recommended, not required: sandbox-exec, sandbox-report
# and sandbox-check work without it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS systemd)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/packaging/debian/conffiles;${PROJECT_SOURCE_DIR}/packaging/debian/postinst;${PROJECT_SOURCE_DIR}/packaging/debian/prerm;${PROJECT_SOURCE_DIR}/packaging/debian/postrm")
# Maintainer scripts 0755 and conffiles 0644 whatever the checkout's modes are.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
