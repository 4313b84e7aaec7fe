"""ResNet-18 (torchvision, 8 images 64x64, as the kit) on DEVICE against the CPU: losses of two SGD steps,
the largest gradient differences after the first backward, in float32 and float64."""

import sys

import torch
import torchvision

device = sys.argv[1]
torch._C._set_cudnn_allow_tf32(False)
torch.manual_seed(0)
ref = torchvision.models.resnet18(num_classes=10)
batches = [(torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,))) for _ in range(2)]
for dtype in (torch.float32, torch.float64):
    cpu = torchvision.models.resnet18(num_classes=10)
    cpu.load_state_dict(ref.state_dict())
    cpu = cpu.to(dtype)
    dev = torchvision.models.resnet18(num_classes=10)
    dev.load_state_dict(ref.state_dict())
    dev = dev.to(dtype).to(device)
    losses = {}
    grads = {}
    for name, net, where in (("cpu", cpu, "cpu"), (device, dev, device)):
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        losses[name] = []
        for step, (x, y) in enumerate(batches):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x.to(dtype).to(where)), y.to(where))
            loss.backward()
            if step == 0:
                grads[name] = {k: p.grad.detach().cpu().clone() for k, p in net.named_parameters()}
            opt.step()
            losses[name].append(loss.item())
    print(dtype, "losses", losses)
    rows = []
    for k, g in grads["cpu"].items():
        d = (grads[device][k] - g).abs().max().item()
        rows.append((d / (g.abs().max().item() + 1e-30), d, k))
    rows.sort(reverse=True)
    for rel, d, k in rows[:6]:
        print(f"  grad {k}: max abs diff {d:.3e}, relative to max {rel:.3e}")
