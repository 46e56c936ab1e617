/* The run log's format name and version (docs/LOG_FORMAT.md): what the
 * shim's header line writes (observe/record_lines.c) and what the
 * launcher's report accepts (tools/launcher/report_log.c, report_input.c).
 * The names inside the log are log_vocab.def's. Raise the version when a
 * reader of the previous one would misread a new log; the report keeps
 * reading every version from LOG_FORMAT_OLDEST on. */
#ifndef P2PSHIM_LOG_FORMAT_H
#define P2PSHIM_LOG_FORMAT_H

#define LOG_FORMAT_NAME "p2pshim-log"
#define LOG_FORMAT_VERSION 2
#define LOG_FORMAT_OLDEST 1

#endif
