# The .deb: the static oarbank-agent (and oarbank-agent-full, which it execs for every line but
# a plain sandbox-exec or sandbox-run), the systemd unit (a template, one instance per module),
# the commented default /etc/oarbank/agent.json, an example module, and the documents.
# Build it with scripts/package.sh; check it with tests/packaging/check-deb.sh. See
# docs/packaging.md.

set(OARBANK_DOC_DIR share/doc/oarbank-agent)

# Relative destinations land under CPACK_PACKAGING_INSTALL_PREFIX (/usr) in the package.
# lib/systemd/system under /usr: where systemd looks on merged-/usr systems (Debian 12) and
# on split ones alike, and where Debian is moving every unit.
install(FILES packaging/systemd/oarbank-agent@.service packaging/systemd/oarbank.slice
              packaging/systemd/oarbank-nfd.service packaging/systemd/oarbank-nfd.path
              packaging/systemd/oarbank-sandbox-stock.service
        DESTINATION lib/systemd/system)
# What oarbank-nfd.service runs: a helper, not a command for users (so not in /usr/bin).
install(PROGRAMS packaging/nfd/oarbank-nfd-features DESTINATION lib/oarbank-agent)
# Absolute: /etc is not under the prefix. It is a conffile (packaging/debian/conffiles), so
# an upgrade keeps the operator's edits.
install(FILES packaging/agent.json DESTINATION /etc/oarbank)
# Issue 16: bash completion of the sub-commands and options (bash-completion loads it on
# demand from here).
install(FILES packaging/bash-completion/oarbank-agent DESTINATION share/bash-completion/completions)
# Issue 16: the man page, generated at build time from the binary's own --help-all and
# --version by help2man (scripts/install-deps.sh installs it), with the sections --help has
# not (exit status, files, see also) from packaging/oarbank-agent.h2m; so it cannot drift
# from the options. Without help2man the build goes on without it, and scripts/package.sh
# refuses to package (a .deb must carry it).
find_program(OARBANK_HELP2MAN help2man)
if(OARBANK_HELP2MAN)
  set(OARBANK_MAN_PAGE ${CMAKE_CURRENT_BINARY_DIR}/man/oarbank-agent.1.gz)
  add_custom_command(
    OUTPUT ${OARBANK_MAN_PAGE}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
    # --version-string: the package's version alone in the page's footer (--version adds
    # the commit, too long for it).
    COMMAND ${OARBANK_HELP2MAN} --no-info --help-option=--help-all
            --version-string=${PROJECT_VERSION}
            --name "run third-party modules under Landlock, seccomp and cgroup v2"
            --include ${PROJECT_SOURCE_DIR}/packaging/oarbank-agent.h2m
            --output ${CMAKE_CURRENT_BINARY_DIR}/man/oarbank-agent.1 $<TARGET_FILE:oarbank-agent>
    # -n: no name or time stamp in the gzip header, so the same page gives the same bytes.
    COMMAND gzip -9nf ${CMAKE_CURRENT_BINARY_DIR}/man/oarbank-agent.1
    DEPENDS oarbank-agent oarbank-agent-full ${PROJECT_SOURCE_DIR}/packaging/oarbank-agent.h2m
    COMMENT "Generating the oarbank-agent(1) man page with help2man")
  add_custom_target(oarbank_man_page ALL DEPENDS ${OARBANK_MAN_PAGE})
  install(FILES ${OARBANK_MAN_PAGE} DESTINATION share/man/man1)
else()
  message(STATUS "help2man not found: no man page (scripts/install-deps.sh installs help2man)")
endif()
# Debian policy: /usr/share/doc/PACKAGE/copyright (DEP-5) and changelog.Debian.gz.
set(OARBANK_CHANGELOG ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.Debian.gz)
add_custom_command(
  OUTPUT ${OARBANK_CHANGELOG}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/debian
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/debian/changelog > ${OARBANK_CHANGELOG}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/debian/changelog
  COMMENT "Compressing the Debian changelog")
add_custom_target(oarbank_changelog ALL DEPENDS ${OARBANK_CHANGELOG})
install(FILES ${OARBANK_CHANGELOG} packaging/debian/copyright DESTINATION ${OARBANK_DOC_DIR})
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
