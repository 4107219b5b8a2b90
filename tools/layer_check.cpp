// The whole program of a layer check (zero/CMakeLists.txt): it calls nothing, and is
// linked against one layer in full and the layers that layer declares it uses. If any
// object of the layer calls into a layer above, that symbol is undefined and the link
// fails, naming the function and the file that calls it.
int main() { return 0; }
