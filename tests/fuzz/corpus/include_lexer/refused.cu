#include "ok.h"
#include "../../etc/passwd"
//@@ ok.h
#include </usr/include/stdio.h>
//@@ ../outside.h
int x;
