// voxstream: the command-line tool (see cli.hpp). The device work lives in the .cu files of
// this directory; this file, like the CLI11 parser in cli.cpp, is plain C++ on both backends.
#include "cli.hpp"

int main(int argc, char** argv) { return vox::cli::main_entry(argc, argv); }
