/* placeholder, replaced by the expander/NAP work: an empty verb table so that
 * server/ctl.c links until the real server/ctl_autoprov.c lands. */
#include "ctl.h"

const ctl_verb_t ctl_verbs_autoprov[] = {{0}};
const size_t ctl_verbs_autoprov_count = 0;
