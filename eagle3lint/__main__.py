from eagle3lint.cli import main

main()
