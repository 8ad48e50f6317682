#include "ok.h"
//@@ namewith[2Kcontrolcharacters.h
#include "/etc/passwd"
