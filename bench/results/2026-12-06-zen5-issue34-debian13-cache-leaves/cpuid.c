// Prints the CPUID leaves oneDNN reads for cache sizes (0x8000001D on AMD, 4 on Intel; 0x80000006 the legacy one).
// Build and run: gcc -O2 cpuid.c -o cpuid && ./cpuid > cpuid.txt
#include <cpuid.h>
#include <stdio.h>
int main(){unsigned a,b,c,d;
for(unsigned leaf=0x8000001D,i=0;i<5;i++){__cpuid_count(leaf,i,a,b,c,d);printf("8000001D.%u: %08x %08x %08x %08x\n",i,a,b,c,d);}
for(unsigned i=0;i<5;i++){__cpuid_count(4,i,a,b,c,d);printf("4.%u: %08x %08x %08x %08x\n",i,a,b,c,d);}
__cpuid(0x80000006,a,b,c,d);printf("80000006: %08x %08x %08x %08x\n",a,b,c,d);
__cpuid(0x80000001,a,b,c,d);printf("80000001: %08x %08x %08x %08x (topoext bit22 of ecx=%u)\n",a,b,c,d,(c>>22)&1);
__cpuid(0,a,b,c,d);printf("max leaf %u vendor %.4s%.4s%.4s\n",a,(char*)&b,(char*)&d,(char*)&c);
}
