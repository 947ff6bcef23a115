/* The program frugal_layer_check (server/CMakeLists.txt) links a layer's whole archive
 * into: it only has to exist for the linker to resolve every symbol the layer uses. */
int main(void) {
    return 0;
}
