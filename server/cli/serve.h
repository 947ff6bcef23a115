/* `frugal serve -c FILE`: load the config, open the cluster, serve every listener until
 * SIGTERM/SIGINT, then drain (grace 10 s), persist and exit. argv[0] is "serve"; returns
 * the process exit status. */
#ifndef FRUGAL_SERVE_H
#define FRUGAL_SERVE_H

int cmd_serve(int argc, char **argv);

#endif
