# Script mode helper for hf_embed(): INPUT -> OUTPUT as
#   const char VAR[] = {...}; const unsigned long VAR_len = N;
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}" "/* Generated from ${name} by cmake/EmbedFile.cmake. Do not edit. */\n"
  "const char ${VAR}[] = {\n${bytes}0x00};\n"
  "const unsigned long ${VAR}_len = ${len};\n")
