# Writes OUTPUT, a C++ header defining `const char* NAME`: the files INPUTS (a ;-list, relative to
# ROOT) concatenated, as one raw string literal. The CUDA library kernels reach ampc this way.
set(text "")
foreach(input ${INPUTS})
  file(READ ${ROOT}/${input} part)
  string(APPEND text "\n// ---- ${input} ----\n${part}")
endforeach()
set(generated "// Generated from ${INPUTS} by codegen/EmbedText.cmake; do not edit.\nstatic const char* ${NAME} = R\"AMP_EMBEDDED(${text})AMP_EMBEDDED\";\n")
file(WRITE ${OUTPUT}.tmp "${generated}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
