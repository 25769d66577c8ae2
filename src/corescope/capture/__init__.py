"""`corescope capture`: a window of the store written as plain, documented files in one
bundle, which `analyze` reads back into the same investigation."""
