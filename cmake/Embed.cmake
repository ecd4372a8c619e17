# hf_embed(OUT_C VAR_NAME INPUT): turn a text file (Redis library, SQL
# migration) into a C string so the binary always carries the exact version it
# was built with. Regenerated whenever INPUT changes.
function(hf_embed out_c var input)
  add_custom_command(
    OUTPUT ${out_c}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${out_c} -DVAR=${var}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/EmbedFile.cmake
    COMMENT "Embedding ${input}"
    VERBATIM)
endfunction()
