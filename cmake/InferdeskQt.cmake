# Finds the Qt 6 parts the desktop app needs. A missing one stops the configure step with the
# Debian package that brings it: the GUI is never dropped silently (Qt6Charts, for one, needs
# Qt6OpenGL's CMake package, which only libqt6opengl6-dev installs). Qt6Keychain (QtKeychain) keeps
# the Hub token in the desktop's secret service. Qt6Svg writes the dashboard's plots as SVG.
set(_qt_parts
  "Core=qt6-base-dev" "Gui=qt6-base-dev libgl-dev" "Widgets=qt6-base-dev"
  "Concurrent=qt6-base-dev" "Test=qt6-base-dev" "OpenGL=libqt6opengl6-dev"
  "Charts=qt6-charts-dev" "Svg=qt6-svg-dev")
set(_missing "")
set(_packages "")
foreach(part ${_qt_parts})
  string(REPLACE "=" ";" part "${part}")
  list(GET part 0 _name)
  list(GET part 1 _pkg)
  find_package(Qt6${_name} 6.4 QUIET)
  if(NOT Qt6${_name}_FOUND)
    string(APPEND _missing "\n  Qt6${_name} (Debian package: ${_pkg})")
    list(APPEND _packages ${_pkg})
  endif()
endforeach()
find_package(Qt6Keychain QUIET)  # QtKeychain's own version (0.13), not Qt's
if(NOT Qt6Keychain_FOUND)
  string(APPEND _missing "\n  Qt6Keychain (Debian package: qtkeychain-qt6-dev)")
  list(APPEND _packages qtkeychain-qt6-dev)
endif()
if(_missing)
  list(REMOVE_DUPLICATES _packages)
  string(REPLACE ";" " " _packages "${_packages}")
  message(FATAL_ERROR "The desktop app needs Qt 6.4 or newer; not found:${_missing}\n"
          "Install them with: sudo apt-get install ${_packages}\n"
          "(bash scripts/install-deps.sh installs everything), or configure with "
          "-DINFERDESK_WITH_GUI=OFF to build the engine and inferdesk-cli without the desktop app.")
endif()
find_package(Qt6 6.4 REQUIRED COMPONENTS Widgets Charts Concurrent Test)
