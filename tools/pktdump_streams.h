/* efarm-pktdump's stream inputs: a pcap capture (EFARM_CAPTURE) and a data-level log. */
#ifndef PKTDUMP_STREAMS_H
#define PKTDUMP_STREAMS_H

#include <stdbool.h>
#include <stdio.h>

/*
 * Every record of a capture file (efarm_capture.h's format) with its
 * timestamp, direction, endpoint, peer and process, then the packet decoded
 * (text, or one JSON object per record). Returns 0, or 1 after one line on
 * stderr for a file that is not such a capture or is cut short (the records
 * before are printed). An undecodable packet is printed as such, not an error.
 */
int pktdump_pcap(FILE *in, const char *name, bool json);

/*
 * Every packet of an EFARM_LOG_LEVEL=data log (stderr of efarm processes,
 * other lines ignored): its header line, then the packet decoded from the hex
 * line that follows. Returns 0; 1 after one line on stderr when no packet was
 * found or a hex line is malformed.
 */
int pktdump_log(FILE *in, bool json);

#endif /* PKTDUMP_STREAMS_H */
