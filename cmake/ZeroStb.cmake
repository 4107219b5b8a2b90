# Finds stb_image_write, the header-only PNG encoder behind zero/io/png.cpp, as Debian's
# libstb-dev installs it (/usr/include/stb/stb_image_write.h; tools/setup.sh installs the
# package). Result: the imported target Zero::stb, which only adds the include folder;
# the implementation is compiled in zero/io/png.cpp alone (the libstb.so that the package
# also ships is not linked). The tests read PNG files back with stb_image.h from the
# same folder. A machine that cannot install the package (a GPU machine with no network)
# can name a folder holding both headers in the environment variable of the same name.
find_path(ZERO_STB_INCLUDE_DIR stb_image_write.h HINTS $ENV{ZERO_STB_INCLUDE_DIR}
          PATH_SUFFIXES stb
          DOC "folder holding stb_image_write.h (Debian package libstb-dev)")
if(NOT ZERO_STB_INCLUDE_DIR)
  message(FATAL_ERROR "Zero: stb_image_write.h not found. Install the Debian package "
                      "libstb-dev (tools/setup.sh does), or pass "
                      "-DZERO_STB_INCLUDE_DIR=<folder holding stb_image_write.h> "
                      "(or set that environment variable)")
endif()
add_library(Zero::stb INTERFACE IMPORTED)
set_target_properties(Zero::stb PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${ZERO_STB_INCLUDE_DIR})
message(STATUS "Zero: stb_image_write in ${ZERO_STB_INCLUDE_DIR}")
