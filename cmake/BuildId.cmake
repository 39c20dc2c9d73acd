# BuildId.cmake -- run as `cmake -DOUT=file.c -DSOURCES=a;b -DEXTRA=text -P BuildId.cmake`:
# writes a C file defining dpgd_build_id, a text that changes whenever a library source
# or the compiler and flags change. A research run's resume replays steps bit for bit
# only under the same build; checkpoints record this text (train/RUN_FORMAT.md).
set(all "")
foreach(f IN LISTS SOURCES)
  file(SHA256 "${f}" h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 digest "${all}")
string(SUBSTRING "${digest}" 0 16 digest)
set(text "const char dpgd_build_id[] = \"${EXTRA} src ${digest}\";\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${text}")
