"""A stand-in for the `horovod` package that forwards to ringscope, so
Horovod's own test files run against ringscope unchanged (run.sh). Only
names are forwarded: nothing here reduces, gathers or negotiates."""
