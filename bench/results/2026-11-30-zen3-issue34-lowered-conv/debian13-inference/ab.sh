# Two interleaved rounds of the new build (fcc9b39, /root/zoo-new) and the build before (27c05f3) alone, inference only
# (bench/zoo runs batch 1 and 42 single-threaded whatever --batch says); output ab-{new,old}-R.txt, here batch1-*.txt.
for r in 1 2; do
for b in new old; do
  z=/root/zoo-new; [ $b = old ] && z=/root/old/build/bench/zoo
  S=$(date +%s)
  $z --net alexnet,vgg16_bn,resnet50,resnet18 --batch 1 --no-training --no-pytorch > /root/ab-$b-$r.txt 2>&1
  echo "$b $r $(( $(date +%s) - S ))s"; grep infer /root/ab-$b-$r.txt
done; done
