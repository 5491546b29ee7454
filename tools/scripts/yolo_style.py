"""A YOLOv8-style detector written in plain torch (no ultralytics), for export with random weights.

The layout follows the published YOLOv8 architecture (scaled like the "nano" size by default):
  * Conv = Conv2d (no bias) + BatchNorm + SiLU;
  * C2f: a 1x1 Conv, its output split into two channel halves, a chain of Bottlenecks (two 3x3
    Convs, residual Add when `shortcut`) on the second half, every intermediate concatenated and
    merged by a 1x1 Conv;
  * SPPF: a 1x1 Conv, three 5x5 stride-1 MaxPools in a row, their outputs concatenated, a 1x1 Conv;
  * the neck upsamples (nearest) and concatenates with earlier levels (P3, P4, P5);
  * the anchor-free head: per level a box branch (4 x reg_max distribution bins) and a class branch,
    decoded in the graph (DFL softmax + 1x1 conv with fixed weights 0..reg_max-1, anchor points,
    strides), output [1, 4 + classes, anchors].
Channel halves, residual Adds into a Concat, upsample-concat and the decode are what real YOLO
exports contain; they are the shapes that exposed a reference-speed convolution path in nxrt.
"""
import torch
from torch import nn


class ConvBnSilu(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut):
        super().__init__()
        self.cv1 = ConvBnSilu(c, c, 3)
        self.cv2 = ConvBnSilu(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = ConvBnSilu(c1, 2 * self.c, 1)
        self.cv2 = ConvBnSilu((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = ConvBnSilu(c1, c_, 1)
        self.cv2 = ConvBnSilu(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Detect(nn.Module):
    def __init__(self, classes, channels, strides, reg_max=16):
        super().__init__()
        self.classes, self.reg_max, self.strides = classes, reg_max, strides
        c2 = max(16, channels[0] // 4, reg_max * 4)
        c3 = max(channels[0], min(classes, 100))
        self.box = nn.ModuleList(
            nn.Sequential(ConvBnSilu(c, c2, 3), ConvBnSilu(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
            for c in channels)
        self.cls = nn.ModuleList(
            nn.Sequential(ConvBnSilu(c, c3, 3), ConvBnSilu(c3, c3, 3), nn.Conv2d(c3, classes, 1))
            for c in channels)
        self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False)
        with torch.no_grad():
            self.dfl.weight.copy_(torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1))
        self.dfl.weight.requires_grad_(False)

    def anchors(self, feats):
        points, strides = [], []
        for f, s in zip(feats, self.strides):
            h, w = f.shape[2], f.shape[3]
            sy, sx = torch.meshgrid(torch.arange(h, dtype=torch.float32) + 0.5,
                                    torch.arange(w, dtype=torch.float32) + 0.5, indexing="ij")
            points.append(torch.stack((sx, sy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), float(s)))
        return torch.cat(points).transpose(0, 1), torch.cat(strides).transpose(0, 1)

    def forward(self, feats):
        outs = [torch.cat((b(f), c(f)), 1) for f, b, c in zip(feats, self.box, self.cls)]
        n = outs[0].shape[0]
        flat = torch.cat([o.view(n, 4 * self.reg_max + self.classes, -1) for o in outs], 2)
        box, cls = flat.split((4 * self.reg_max, self.classes), 1)
        a = box.shape[2]
        dist = self.dfl(box.view(n, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(n, 4, a)
        points, strides = self.anchors(feats)
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = points - lt, points + rb
        xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((xywh, cls.sigmoid()), 1)


class YoloStyle(nn.Module):
    """width / depth scale YOLOv8's base sizes (nano: 0.25 / 0.33)."""

    def __init__(self, classes=80, width=0.25, depth=0.33):
        super().__init__()

        def ch(c):
            return max(8, int(round(c * width / 8)) * 8)

        def n(k):
            return max(1, round(k * depth))

        c = [ch(v) for v in (64, 128, 256, 512, 1024)]
        self.b0 = ConvBnSilu(3, c[0], 3, 2)
        self.b1 = ConvBnSilu(c[0], c[1], 3, 2)
        self.b2 = C2f(c[1], c[1], n(3), True)
        self.b3 = ConvBnSilu(c[1], c[2], 3, 2)
        self.b4 = C2f(c[2], c[2], n(6), True)
        self.b5 = ConvBnSilu(c[2], c[3], 3, 2)
        self.b6 = C2f(c[3], c[3], n(6), True)
        self.b7 = ConvBnSilu(c[3], c[4], 3, 2)
        self.b8 = C2f(c[4], c[4], n(3), True)
        self.b9 = SPPF(c[4], c[4])
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h12 = C2f(c[4] + c[3], c[3], n(3))
        self.h15 = C2f(c[3] + c[2], c[2], n(3))
        self.h16 = ConvBnSilu(c[2], c[2], 3, 2)
        self.h18 = C2f(c[2] + c[3], c[3], n(3))
        self.h19 = ConvBnSilu(c[3], c[3], 3, 2)
        self.h21 = C2f(c[3] + c[4], c[4], n(3))
        self.detect = Detect(classes, (c[2], c[3], c[4]), (8, 16, 32))

    def forward(self, x):
        x = self.b2(self.b1(self.b0(x)))
        p3 = self.b4(self.b3(x))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h12 = self.h12(torch.cat((self.up(p5), p4), 1))
        h15 = self.h15(torch.cat((self.up(h12), p3), 1))
        h18 = self.h18(torch.cat((self.h16(h15), h12), 1))
        h21 = self.h21(torch.cat((self.h19(h18), p5), 1))
        return self.detect([h15, h18, h21])
